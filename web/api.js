// The JSON API as the dashboard calls it: relative paths (so the page works
// behind a proxy under a prefix), the bearer token from this browser's local
// storage when one was saved, errors as ApiError with the server's message.
const TOKEN_KEY = 'berth.token';

export function token() {
  try { return localStorage.getItem(TOKEN_KEY) || ''; } catch { return ''; }
}

export function setToken(t) {
  try { t ? localStorage.setItem(TOKEN_KEY, t) : localStorage.removeItem(TOKEN_KEY); } catch { /* storage off */ }
}

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

// GET (or opts.method) `path` ("v1/nodes"); resolves to the parsed JSON.
export async function api(path, opts = {}) {
  const headers = { Accept: 'application/json', ...(opts.headers || {}) };
  const t = token();
  if (t) headers.Authorization = 'Bearer ' + t;
  let res;
  try {
    res = await fetch(path, { ...opts, headers, cache: 'no-store' });
  } catch (e) {
    throw new ApiError(0, 'the server did not answer (' + e.message + ')');
  }
  const text = await res.text();
  let body = null;
  try { body = text ? JSON.parse(text) : null; } catch { body = text; }
  if (!res.ok) {
    const msg = body && typeof body === 'object' && body.error ? body.error : res.status + ' ' + res.statusText;
    throw new ApiError(res.status, msg);
  }
  return body;
}
