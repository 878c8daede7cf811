#!/usr/bin/env python3
"""Makes the qwen2 golden (tests/engine/models/golden/qwen2-tiny-f32.server.json) with the shipped
llama-server: the tiny qwen2 model `cellserve synth` writes (F32, seed 1004) is served by
llama-server, asked for a greedy continuation of a fixed token prompt with the top n_probs
log-probabilities of every generated token, and the answer is written as JSON with the commands
that made it. tests/engine/models/qwen2_golden_test.cpp synthesizes the same model and compares.

  tools/qwen2_golden.py --cellserve build/cli/cellserve \
      --llama-server ../shared/anchors/llama.cpp/llama-server \
      --out tests/engine/models/golden/qwen2-tiny-f32.server.json

Only the standard library; llama-server on 127.0.0.1, stopped at the end.
"""
import argparse
import hashlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

SEED = 1004
N_PREDICT = 32
N_PROBS = 10
MIN_DISTINCT = 8


def prompt_of(k):
    """48 ids of ordinary byte-pair tokens (below the specials at 1000+), spread over the vocabulary."""
    return [(i * 37 + 11 + 13 * k) % 997 + 3 for i in range(48)]
LLAMA_CPP_COMMIT = "d32676d77426540327835040d5d3279728f0b4c8"  # ../shared/anchors/llama.cpp/README.md


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stream_completion(port, prompt):
    """The greedy tokens and their top log-probabilities, from the stream's chunks. This
    llama-server ends a stream with an error when the text is not valid UTF-8 ("does not match
    the expected Content-only format"), and random weights make such bytes: the chunks before the
    error carry every token but those held back as an incomplete character."""
    body = json.dumps({"prompt": prompt, "n_predict": N_PREDICT, "temperature": 0, "n_probs": N_PROBS,
                       "cache_prompt": False, "ignore_eos": True, "stream": True}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/completion", data=body,
                                 headers={"Content-Type": "application/json"})
    steps = []
    with urllib.request.urlopen(req, timeout=120) as r:
        for raw in r:
            line = raw.decode("utf-8", "replace").strip()
            if not line.startswith("data: "):
                continue
            chunk = json.loads(line[len("data: "):])
            for p in chunk.get("completion_probabilities", []):
                steps.append({"token": p["id"],
                              "top": [{"id": t["id"], "logprob": t["logprob"]} for t in p["top_logprobs"]]})
    return steps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cellserve", required=True)
    ap.add_argument("--llama-server", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "qwen2-tiny-f32.gguf")
        synth = [a.cellserve, "synth", "--arch", "qwen2", "--shape", "tiny", "--type", "F32", "--seed", str(SEED),
                 "--out", model]
        subprocess.run(synth, check=True, stdout=subprocess.DEVNULL)
        data = open(model, "rb").read()
        port = free_port()
        server_args = ["-t", "2", "-c", "256", "-np", "1", "-ctk", "f32", "-ctv", "f32", "-fa", "off"]
        server = subprocess.Popen([a.llama_server, "-m", model, "--host", "127.0.0.1", "--port", str(port)] + server_args,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(300):
                try:
                    if urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2).status == 200:
                        break
                except OSError:
                    time.sleep(0.1)
            else:
                sys.exit("qwen2_golden: llama-server did not come up")
            # The first of the fixed prompts whose whole continuation streams (see stream_completion)
            # and does not settle on repeating one token (random weights often do): at least
            # MIN_DISTINCT different tokens, so that the greedy path checks more than one answer.
            for k in range(400):
                prompt = prompt_of(k)
                steps = stream_completion(port, prompt)
                if len(steps) == N_PREDICT and len({s["token"] for s in steps}) >= MIN_DISTINCT:
                    break
            else:
                sys.exit(f"qwen2_golden: no prompt of the 400 gave {N_PREDICT} streamed, varied tokens")
        finally:
            server.terminate()
            server.wait(timeout=30)
    golden = {
        "schema": "golden-server-logprobs/1",
        "label": "qwen2-tiny-f32",
        "llama_cpp_commit": LLAMA_CPP_COMMIT,
        "made_by": "tools/qwen2_golden.py --cellserve build/cli/cellserve --llama-server "
                   "../shared/anchors/llama.cpp/llama-server --out " + a.out,
        "model": {"synth": "cellserve synth --arch qwen2 --shape tiny --type F32 --seed %d" % SEED,
                  "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)},
        "server": "llama-server -m MODEL " + " ".join(server_args),
        "request": {"endpoint": "/completion", "prompt": "token ids", "n_predict": N_PREDICT, "temperature": 0,
                    "n_probs": N_PROBS, "ignore_eos": True, "cache_prompt": False},
        "prompt_tokens": prompt,
        "steps": steps,
    }
    with open(a.out, "w") as f:
        json.dump(golden, f, indent=1)
        f.write("\n")
    print(f"wrote {a.out}: {len(steps)} greedy tokens with their top {N_PROBS} log-probabilities")


if __name__ == "__main__":
    main()
