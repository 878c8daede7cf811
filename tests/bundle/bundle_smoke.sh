#!/usr/bin/env bash
# Smoke test of a self-contained bundle (scripts/bundle). Usage:
#   tests/bundle/bundle_smoke.sh BUNDLE_TARBALL X86_CELLSERVE TESTDATA_DIR
# Unpacks the tarball read-only and runs the bundled cellserve with no host library: an aarch64
# bundle under qemu-aarch64-static -L EMPTY_DIR, an x86_64 one natively. Checks --version, the
# launcher (bin/cellserve), inspect and run on a testdata model, that every library loaded came
# from the bundle (LD_DEBUG), the same in a chroot holding nothing but the bundle (when run as
# root), and end to end: an X86_CELLSERVE hub, the bundled binary as its agent, a deployment of
# a testdata model and a chat completion through the hub. Exits 77 (skipped) without testdata.
set -euo pipefail

die() { echo "bundle_smoke: FAIL: $*" >&2; exit 1; }

(($# == 3)) || die "usage: tests/bundle/bundle_smoke.sh BUNDLE_TARBALL X86_CELLSERVE TESTDATA_DIR"
tarball=$(realpath "$1")
x86=$(realpath "$2")
testdata=$3
[[ -f $tarball ]] || die "no tarball at $1"
[[ -x $x86 ]] || die "no cellserve binary at $2"
# The smallest llama model (inspect, run) and the smallest with a chat template (the deployment).
small_model=$testdata/models/stories260K-q4_0.gguf
chat_model=$testdata/models/qwen3-tiny-q4_0.gguf
if [[ ! -f $small_model || ! -f $chat_model ]]; then
  echo "bundle_smoke: SKIP: testdata models not found in '$testdata' (stories260K-q4_0.gguf, qwen3-tiny-q4_0.gguf)"
  exit 77
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/cs-bundle-smoke.XXXXXX")
empty=$(mktemp -d "${TMPDIR:-/tmp}/cs-bundle-empty.XXXXXX")
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do
    kill -TERM "$pid" 2> /dev/null || true
  done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2> /dev/null || true
    wait "$pid" 2> /dev/null || true
  done
  chmod -R u+w "$work" 2> /dev/null || true
  rm -rf "$work" "$empty"
}
trap cleanup EXIT

now() { echo "${EPOCHREALTIME/,/.}"; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f s", b - a }'; }

tar -C "$work" -xzf "$tarball"
name=$(basename "$tarball" .tar.gz)
root=$work/$name
[[ -d $root/libexec ]] || die "$tarball holds no $name/ tree"
chmod -R a-w "$root" # the bundle must run without writing to itself
case $name in
  *-linux-aarch64)
    loader=ld-linux-aarch64.so.1
    emulator=(qemu-aarch64-static -L "$empty")
    command -v qemu-aarch64-static > /dev/null || die "qemu-aarch64-static not found (scripts/setup installs qemu-user-static)"
    ;;
  *-linux-x86_64)
    loader=ld-linux-x86-64.so.2
    emulator=()
    ;;
  *) die "cannot tell the architecture of $name" ;;
esac
echo "bundle_smoke: $name, unpacked read-only in $root"

# The bundled binary exactly as bin/cellserve runs it, under the emulator if any.
bundled=("${emulator[@]}" "$root/lib/$loader" --inhibit-cache --library-path "$root/lib" "$root/libexec/cellserve")
log=$work/logs
mkdir -p "$log"

# step NAME TIMEOUT_S COMMAND...: runs COMMAND with a timeout, its output in $log/NAME.
step() {
  local what=$1 limit=$2 start rc=0
  shift 2
  echo "== $what: $*"
  start=$(now)
  timeout "$limit" "$@" > "$log/$what" 2>&1 || rc=$?
  echo "   exit $rc in $(since "$start")"
  if ((rc != 0)); then
    tail -n 20 "$log/$what" | sed 's/^/   | /'
    die "$what exited $rc"
  fi
}
show() { sed -n "${2:-1,5}p" "$log/$1" | cut -c1-160 | sed 's/^/   | /'; }

step version 60 "${bundled[@]}" --version
show version
grep -q "^cellserve [0-9]" "$log/version" || die "--version printed no version"
grep -qx "cellserve $(cat "$root/VERSION")" "$log/version" || die "--version does not match VERSION ($(cat "$root/VERSION"))"

# The launcher itself; CELLSERVE_EMULATOR (test only) puts the emulator in front of the loader.
step launcher-version 60 env CELLSERVE_EMULATOR="${emulator[*]}" "$root/bin/cellserve" --version
show launcher-version
step launcher-help 60 env CELLSERVE_EMULATOR="${emulator[*]}" "$root/bin/cellserve" --help
grep -q "Usage: $root/bin/cellserve " "$log/launcher-help" || die "the launcher did not pass --argv0"
grep -q "SSL_CERT_FILE" "$root/bin/cellserve" || die "the launcher sets no SSL_CERT_FILE"

step inspect 60 "${bundled[@]}" inspect "$small_model"
show inspect 1,5
grep -q "^architecture: *llama" "$log/inspect" || die "inspect did not read the model"

step run 180 "${bundled[@]}" run -m "$small_model" -p "Once upon a time" -n 12 --temp 0 -t 2
show run 1,3
grep -q "[[:alpha:]]" "$log/run" || die "run printed no text"

# Every object the loader loaded came from the bundle's lib/ (qemu's -L only prefixes paths, so
# a library missing from lib/ could still come from the host's /usr/lib/aarch64-linux-gnu).
step ldlist 60 "${emulator[@]}" "$root/lib/$loader" --inhibit-cache --library-path "$root/lib" --list "$root/libexec/cellserve"
if grep -v "linux-vdso\|^[[:space:]]*(0x" "$log/ldlist" | grep -v "=> $root/lib/" | grep .; then
  die "libraries resolved outside the bundle (above)"
fi
echo "   $(grep -c "=> $root/lib/" "$log/ldlist") libraries, all from $root/lib"

# A chroot holding only the bundle (and qemu, itself static): no host file can be reached.
chroot_dir=$work/chroot
if [[ $(id -u) == 0 ]] && chroot / true 2> /dev/null; then
  mkdir -p "$chroot_dir/b"
  cp -a "$root/." "$chroot_dir/b/"
  cp "$small_model" "$chroot_dir/model.gguf"
  inner=("/b/lib/$loader" --library-path /b/lib /b/libexec/cellserve)
  if ((${#emulator[@]})); then
    cp "$(command -v qemu-aarch64-static)" "$chroot_dir/qemu"
    inner=(/qemu "${inner[@]}")
  fi
  step chroot-version 60 chroot "$chroot_dir" "${inner[@]}" --version
  step chroot-run 180 chroot "$chroot_dir" "${inner[@]}" run -m /model.gguf -p "Once upon a time" -n 12 --temp 0 -t 2
  show chroot-run 1,2
  [[ $(head -n 1 "$log/run") == "$(head -n 1 "$log/chroot-run")" ]] || die "the chroot run's text differs from the unpacked run's"
  chmod -R u+w "$chroot_dir" && rm -rf "$chroot_dir"
else
  echo "== chroot: skipped (needs root and chroot)"
fi

# End to end: the x86 hub, the bundled agent, a deployment and a chat completion through the hub.
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
port=$(free_port)
hub=http://127.0.0.1:$port
echo "== hub: $x86 hub --listen 127.0.0.1:$port --data-dir $work/hub --poll-seconds 0.5"
"$x86" hub --listen "127.0.0.1:$port" --data-dir "$work/hub" --poll-seconds 0.5 > "$log/hub" 2>&1 &
pids+=($!)
# wait_for WHAT LIMIT_S COMMAND...: polls COMMAND every 0.5 s until it succeeds.
wait_for() {
  local what=$1 limit=$2 start
  shift 2
  start=$(now)
  until "$@" > /dev/null 2>&1; do
    awk -v a="$start" -v b="$(now)" -v l="$limit" 'BEGIN { exit !(b - a > l) }' && {
      echo "--- hub log"; tail -n 30 "$log/hub"; echo "--- agent log"; tail -n 30 "$log/agent" 2> /dev/null || true
      die "timed out after $limit s waiting for $what"
    }
    for pid in "${pids[@]}"; do kill -0 "$pid" 2> /dev/null || { tail -n 30 "$log"/hub "$log"/agent 2> /dev/null; die "a process exited while waiting for $what"; }; done
    sleep 0.5
  done
  echo "   $what after $(since "$start")"
}
wait_for "the hub" 20 curl -sf "$hub/health"

mkdir -p "$work/hub/files"
cp "$chat_model" "$work/hub/files/model.gguf"
sha=$(sha256sum "$chat_model" | cut -d' ' -f1)

# LD_DEBUG=libs records every object the agent loads, dlopen()ed ones included.
echo "== agent: ${bundled[*]} agent --hub $hub --data-dir $work/agent --price-per-day 1 --name phone1 --benchmark-shape tiny --no-autotune"
agent_start=$(now)
LD_DEBUG=libs LD_DEBUG_OUTPUT=$work/ld-debug "${bundled[@]}" agent --hub "$hub" --data-dir "$work/agent" --price-per-day 1 \
  --name phone1 --benchmark-shape tiny --no-autotune > "$log/agent" 2>&1 &
pids+=($!)
processor_online() {
  curl -sf "$hub/api/v1/processors" | python3 -c '
import json, sys
sys.exit(0 if any(p["name"] == "phone1" and p["online"] for p in json.load(sys.stdin)["processors"]) else 1)'
}
wait_for "agent phone1 online" 300 processor_online
curl -sf "$hub/api/v1/processors" | python3 -c '
import json, sys
p = next(p for p in json.load(sys.stdin)["processors"] if p["name"] == "phone1")
s, b = p.get("specs", {}), p.get("benchmark", {})
print("   processor: arch", s.get("arch"), "os", s.get("os"), "cores", s.get("cores"), "features", ",".join(s.get("cpu_features", [])),
      "benchmark", b.get("shape"), "prefill", round(b.get("prefill_tps", 0), 1), "decode", round(b.get("decode_tps", 0), 1), "t/s")'

cat > "$work/spec.toml" << EOF
name = "bundle-smoke"
replicas = 1
max_price_per_day = 2
[model]
url = "$hub/files/model.gguf"
sha256 = "$sha"
[engine]
ctx_size = 512
EOF
step deploy 60 "$x86" deploy "$work/spec.toml" --hub "$hub"
show deploy
deploy_start=$(now)
# Prints each new replica state (to fd 3: wait_for silences the probe) and succeeds once ready.
last_state=
deployment_ready() {
  local state
  state=$(curl -sf "$hub/api/v1/deployments/bundle-smoke" | python3 -c '
import json, sys
d = json.load(sys.stdin)
r = d["replicas"][0] if d["replicas"] else {}
print(d["ready"], r.get("state"), r.get("detail") or "")') || return 1
  [[ $state == "$last_state" ]] || echo "   replica: ${state#* } ($(since "$deploy_start"))" >&3
  last_state=$state
  [[ ${state%% *} -ge 1 ]]
}
exec 3>&1
wait_for "deployment bundle-smoke ready" 300 deployment_ready
step deployments-show 60 "$x86" deployments show bundle-smoke --hub "$hub"
show deployments-show 1,4

echo "== chat: curl $hub/d/bundle-smoke/v1/chat/completions (max_tokens 4)"
chat_start=$(now)
status=$(curl -sS -m 120 -o "$log/chat" -w '%{http_code}' -H 'Content-Type: application/json' \
  -d '{"model":"bundle-smoke","messages":[{"role":"user","content":"Hello"}],"max_tokens":4,"temperature":0}' \
  "$hub/d/bundle-smoke/v1/chat/completions")
echo "   HTTP $status in $(since "$chat_start")"
[[ $status == 200 ]] || { cat "$log/chat"; die "chat completion answered $status"; }
python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
m = r["choices"][0]["message"]
assert m["role"] == "assistant" and isinstance(m["content"], str), m
print("   message:", json.dumps(m)[:160], "usage:", r.get("usage"))' "$log/chat" || die "no choices[0].message in $(cat "$log/chat")"
echo "   agent start → answer: $(since "$agent_start"), deploy → ready: $(since "$deploy_start")"

# Every object the agent loaded, at start and since, came from the bundle.
objects=$(cat "$work"/ld-debug.* | sed -n 's/.*calling init: //p' | sort -u)
outside=$(grep -v "^$root/lib/" <<< "$objects" || true)
[[ -z $outside ]] || die "the agent loaded objects from outside the bundle: $outside"
missing=$(cat "$work"/ld-debug.* | sed -n 's/.*find library=\([^ ;]*\).*/\1/p' | sort -u | while read -r lib; do
  [[ -e $root/lib/$lib ]] || echo "$lib"
done)
[[ -z $missing ]] || echo "   note: looked up but not in the bundle (a dlopen that failed): ${missing//$'\n'/ }"
echo "   the agent loaded $(wc -l <<< "$objects") objects, all from $root/lib"

echo "bundle_smoke: PASS ($name)"
