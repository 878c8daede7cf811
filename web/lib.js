// What every page of the dashboard imports: Preact with htm (tagged templates, so no JSX compile
// and no build step), its hooks, uPlot, and the one client of the hub's REST API.
//
// The admin key lives in the browser's sessionStorage only: it is sent as a Bearer header, never
// put in a URL, and is gone when the tab closes.
import { h, render } from './vendor/preact.module.js';
import { useCallback, useEffect, useMemo, useRef, useState } from './vendor/hooks.module.js';
import htm from './vendor/htm.module.js';
import uPlot from './vendor/uPlot.esm.js';

export const html = htm.bind(h);
export { h, render, useCallback, useEffect, useMemo, useRef, useState, uPlot };

const KEY_STORAGE = 'cellserve.adminKey';

export function getKey() {
  return sessionStorage.getItem(KEY_STORAGE) || '';
}
export function setKey(key) {
  sessionStorage.setItem(KEY_STORAGE, key);
}
export function clearKey() {
  sessionStorage.removeItem(KEY_STORAGE);
}

// A failed call: `status` is the HTTP status (0 when the hub could not be reached) and `message`
// the hub's OpenAI-style error message, or a sentence saying what went wrong.
export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

// Listeners told of every 401/403 (the page shows the login form again) and of reachability.
const authListeners = new Set();
export function onAuthFailure(listener) {
  authListeners.add(listener);
  return () => authListeners.delete(listener);
}

// Calls the hub: `path` is absolute ("/api/v1/processors"), `body` is sent as JSON when given.
// Resolves to the parsed JSON body (or null for an empty one); rejects with an ApiError.
export async function api(method, path, body) {
  const headers = {};
  const key = getKey();
  if (key) headers.Authorization = `Bearer ${key}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let response;
  try {
    response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch {
    throw new ApiError(0, 'The hub cannot be reached. Is it running?');
  }
  const text = await response.text();
  let parsed = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = null;
  }
  if (!response.ok) {
    const message = parsed?.error?.message || `${response.status} ${response.statusText}`;
    if (response.status === 401 || response.status === 403) authListeners.forEach((l) => l(message));
    throw new ApiError(response.status, message);
  }
  return parsed;
}

// Polls GET `path` every `intervalMs` while the component is mounted (and at once when `path`
// changes): { data, error, reload }. `data` keeps the last good answer while an error shows.
export function usePoll(path, intervalMs = 2000) {
  const [data, setData] = useState(null);
  const [error, setError] = useState(null);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    if (!path) return undefined;
    let live = true;
    let timer = null;
    const load = async () => {
      try {
        const d = await api('GET', path);
        if (!live) return;
        setData(d);
        setError(null);
      } catch (e) {
        if (live) setError(e);
      }
      if (live) timer = setTimeout(load, intervalMs);
    };
    load();
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [path, intervalMs, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data, error, reload };
}

// Formatting shared by the pages, so the same number reads the same everywhere.
export function fmtNumber(v, digits = 1) {
  if (v === null || v === undefined || Number.isNaN(v)) return '—';
  return Number(v).toFixed(digits);
}
export function fmtBytes(n) {
  if (n === null || n === undefined) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let v = Number(n);
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i += 1;
  }
  return `${v.toFixed(i === 0 ? 0 : 1)} ${units[i]}`;
}
export function fmtAgo(ms, nowMs = Date.now()) {
  if (!ms) return 'never';
  const s = Math.max(0, Math.round((nowMs - ms) / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} d ago`;
}

// A button that asks before it acts (revoke, remove, drain): window.confirm keeps it testable with
// the browser's own dialog handler.
export function confirmThen(question, action) {
  return () => {
    if (window.confirm(question)) action();
  };
}
