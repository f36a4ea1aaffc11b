// Small helpers shared by the pages: an element builder, number and time
// formats, the hash route's query.

// h('td', {class: 'num', dataset: {k: 'usage'}}, '3') -> <td class="num" data-k="usage">3</td>
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'html') el.innerHTML = v;
    else el.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

// GPUs from milli-GPUs or fractional figures: "8", "0.5", "-" for null.
export function gpus(v) {
  if (v === null || v === undefined) return '-';
  const r = Math.round(v * 1000) / 1000;
  return Number.isInteger(r) ? String(r) : r.toFixed(3).replace(/0+$/, '');
}

export function pct(part, whole) {
  if (!whole) return '-';
  return (100 * part / whole).toFixed(1) + '%';
}

// "3m 20s" for 200 seconds.
export function duration(s) {
  if (s === null || s === undefined || !isFinite(s)) return '-';
  s = Math.max(0, Math.round(s));
  if (s < 60) return s + 's';
  if (s < 3600) return Math.floor(s / 60) + 'm ' + (s % 60) + 's';
  if (s < 86400) return Math.floor(s / 3600) + 'h ' + Math.floor((s % 3600) / 60) + 'm';
  return Math.floor(s / 86400) + 'd ' + Math.floor((s % 86400) / 3600) + 'h';
}

// A Unix time in seconds as local "YYYY-MM-DD HH:MM:SS".
export function when(t) {
  if (t === null || t === undefined) return '-';
  const d = new Date(t * 1000);
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

export function badge(state) {
  return h('span', { class: 'badge ' + state }, state);
}

// Writes `params` into the hash route's query (no reload, no history entry per keystroke).
export function setQuery(route, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== '' && v !== undefined && v !== null) q.set(k, v);
  const s = q.toString();
  history.replaceState(null, '', '#/' + route + (s ? '?' + s : ''));
}
