// Simulation reports (`berth simulate --json` / `--report`): open a file from
// this computer (pick or drop it), a URL (#/reports?url=...), or one the
// server serves (`berth serve --reports DIR`: GET v1/reports lists them). A
// JSON report shows every policy's figures and the allocation curves; an HTML
// report is shown as it is, in a frame without scripts.
import { api } from '../api.js';
import { h, gpus, duration } from '../util.js';

export const title = 'Reports';
const COLORS = ['#2457c5', '#d7301f', '#2a9d3c', '#8a3fb0', '#e08a00', '#138a8a', '#7a5230', '#c2185b'];

// The policy objects of a JSON report: an array of them, or an object that
// holds one (under "results", "policies" or "runs").
function policiesOf(doc) {
  if (Array.isArray(doc)) return doc;
  for (const k of ['results', 'policies', 'runs']) if (doc && Array.isArray(doc[k])) return doc[k];
  return null;
}

function chart(series, xLabel) {
  const W = 720, H = 260, L = 48, B = 32, T = 10, R = 10;
  const all = series.flatMap((s) => s.points);
  if (!all.length) return null;
  const xs = all.map((p) => p[0]), ys = all.map((p) => p[1]);
  const x0 = Math.min(...xs), x1 = Math.max(...xs) || 1, y0 = 0, y1 = Math.max(100, ...ys);
  const X = (x) => L + ((x - x0) / (x1 - x0 || 1)) * (W - L - R);
  const Y = (y) => T + (1 - (y - y0) / (y1 - y0 || 1)) * (H - T - B);
  const ns = 'http://www.w3.org/2000/svg';
  const el = (tag, attrs, text) => {
    const e = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const svg = el('svg', { viewBox: `0 0 ${W} ${H + 20 * Math.ceil(series.length / 4)}`, width: W, class: 'chart' });
  for (let y = 0; y <= y1; y += 20) {
    svg.append(el('line', { x1: L, x2: W - R, y1: Y(y), y2: Y(y), stroke: '#e4e7ec' }));
    svg.append(el('text', { x: L - 6, y: Y(y) + 4, 'text-anchor': 'end', 'font-size': 10, fill: '#6b7385' }, y + '%'));
  }
  svg.append(el('text', { x: (L + W) / 2, y: H - 6, 'text-anchor': 'middle', 'font-size': 11, fill: '#6b7385' }, xLabel));
  series.forEach((s, i) => {
    const d = s.points.map((p, k) => (k ? 'L' : 'M') + X(p[0]).toFixed(1) + ',' + Y(p[1]).toFixed(1)).join('');
    svg.append(el('path', { d, fill: 'none', stroke: COLORS[i % COLORS.length], 'stroke-width': 1.5 }));
    const lx = L + (i % 4) * 170, ly = H + 14 + 20 * Math.floor(i / 4);
    svg.append(el('rect', { x: lx, y: ly - 8, width: 12, height: 4, fill: COLORS[i % COLORS.length] }));
    svg.append(el('text', { x: lx + 16, y: ly - 3, 'font-size': 11 }, s.name));
  });
  return svg;
}

function showJson(out, doc, name) {
  const runs = policiesOf(doc);
  if (!runs || !runs.length || typeof runs[0] !== 'object') {
    out.replaceChildren(h('p', { class: 'banner' }, `${name}: not a berth simulate --json report (expected an array of policy results)`));
    return;
  }
  const pctOf = (r) => (r.gpu_allocation_ratio !== undefined ? (100 * r.gpu_allocation_ratio).toFixed(2) + '%' : '-');
  const s = (v) => (v === undefined || v === null ? '-' : typeof v === 'number' ? (v > 0 ? duration(v) : '-') : String(v));
  const cols = [
    ['policy', (r) => r.policy], ['mode', (r) => r.mode], ['seed', (r) => r.seed], ['allocation', pctOf],
    ['jobs', (r) => r.jobs_total], ['placed', (r) => r.jobs_placed], ['failed', (r) => r.jobs_failed],
    ['never fit', (r) => r.jobs_never_fit], ['unfinished', (r) => r.jobs_unfinished],
    ['JCT mean', (r) => s(r.jct_mean_s)], ['JCT p99', (r) => s(r.jct_p99_s)], ['queue mean', (r) => s(r.queue_delay_mean_s)],
    ['preemptions', (r) => r.preemptions], ['GPU-h lost', (r) => (r.gpu_hours_lost !== undefined ? gpus(r.gpu_hours_lost) : undefined)],
    ['wall s', (r) => (r.wall_seconds !== undefined ? r.wall_seconds.toFixed(3) : undefined)], ['decision log', (r) => r.decision_log_hash],
  ].filter(([, f]) => runs.some((r) => f(r) !== undefined && f(r) !== null));
  const parts = [h('h2', {}, name),
    h('table', { id: 'report-table' }, h('thead', {}, h('tr', {}, cols.map(([t]) => h('th', {}, t)))),
      h('tbody', {}, runs.map((r) => h('tr', {}, cols.map(([, f]) => h('td', {}, f(r) ?? '-'))))))];
  const replay = runs.some((r) => r.mode === 'replay');
  const alloc = runs.map((r) => ({ name: r.policy, points: (r.series && r.series.allocation_over_time) || [] })).filter((x) => x.points.length);
  const c = chart(alloc, replay ? 'hours' : 'arrived demand, % of capacity');
  if (c) parts.push(h('h2', {}, 'GPU allocation'), c);
  const queue = runs.map((r) => ({ name: r.policy, points: (r.series && r.series.queue_length_over_time) || [] })).filter((x) => x.points.length);
  const qc = chart(queue, 'hours (y: pending jobs)');
  if (qc) parts.push(h('h2', {}, 'Queue length'), qc);
  const tenants = runs.flatMap((r) => (r.tenants || []).map((t) => ({ policy: r.policy, ...t })));
  if (tenants.length) {
    parts.push(h('h2', {}, 'Per tenant'), h('table', {}, h('thead', {}, h('tr', {}, ['policy', 'tenant', 'queue', 'jobs', 'finished', 'JCT mean', 'queue mean', 'GPU share', 'guarantee share'].map((t) => h('th', {}, t)))),
      h('tbody', {}, tenants.slice(0, 500).map((t) => h('tr', {}, h('td', {}, t.policy), h('td', {}, t.tenant), h('td', {}, t.queue || ''),
        h('td', {}, t.jobs ?? '-'), h('td', {}, t.jobs_finished ?? '-'), h('td', {}, s(t.jct_mean_s)), h('td', {}, s(t.queue_delay_mean_s)),
        h('td', {}, t.gpu_share !== undefined ? (100 * t.gpu_share).toFixed(1) + '%' : '-'),
        h('td', {}, t.guarantee_share !== undefined ? (100 * t.guarantee_share).toFixed(1) + '%' : '-'))))));
  }
  out.replaceChildren(...parts);
}

function show(out, text, name, type) {
  const html = /html/.test(type || '') || /\.html?$/i.test(name) || /^\s*<(!doctype|html)/i.test(text);
  if (html) {
    // No scripts run in the frame (sandbox without allow-scripts); the report needs none.
    out.replaceChildren(h('h2', {}, name), h('iframe', { class: 'report', sandbox: '', srcdoc: text, title: name }));
    return;
  }
  let doc;
  try { doc = JSON.parse(text); } catch (e) {
    out.replaceChildren(h('p', { class: 'banner' }, `${name}: neither JSON nor HTML (${e.message})`));
    return;
  }
  showJson(out, doc, name);
}

export function render(root, { params }) {
  const out = h('div', { id: 'report' });
  const file = h('input', { type: 'file', accept: '.json,.html,.htm,application/json,text/html' });
  const url = h('input', { type: 'url', placeholder: 'URL of a report (.json or .html)', size: 50, value: params.url || '' });
  const served = h('div', { id: 'served' });
  const drop = h('div', { class: 'drop' }, 'Drop a report here, or pick one: ', file);
  const open = h('form', { class: 'filters' }, h('label', {}, 'or open a URL', url), h('button', {}, 'Open'));
  root.append(h('h1', {}, 'Reports'),
    h('p', { class: 'muted' }, 'The JSON (--json) or HTML (--report) output of berth simulate. Files stay in this browser.'),
    drop, open, served, out);

  const load = async (u) => {
    try {
      const res = await fetch(u, { cache: 'no-store' });
      if (!res.ok) throw new Error(res.status + ' ' + res.statusText);
      show(out, await res.text(), decodeURIComponent(u.split('/').pop() || u), res.headers.get('Content-Type'));
    } catch (e) {
      out.replaceChildren(h('p', { class: 'banner' }, `${u}: ${e.message}`));
    }
  };
  const readFile = async (f) => show(out, await f.text(), f.name, f.type);
  file.addEventListener('change', () => file.files[0] && readFile(file.files[0]));
  drop.addEventListener('dragover', (e) => { e.preventDefault(); drop.classList.add('over'); });
  drop.addEventListener('dragleave', () => drop.classList.remove('over'));
  drop.addEventListener('drop', (e) => {
    e.preventDefault();
    drop.classList.remove('over');
    if (e.dataTransfer.files[0]) readFile(e.dataTransfer.files[0]);
  });
  open.addEventListener('submit', (e) => {
    e.preventDefault();
    if (url.value) { history.replaceState(null, '', '#/reports?url=' + encodeURIComponent(url.value)); load(url.value); }
  });
  if (params.url) load(params.url);
  else if (params.name) load('v1/reports/' + encodeURIComponent(params.name));

  return {
    title,
    live: false,
    async refresh() {
      let list;
      try { list = await api('v1/reports'); } catch { served.replaceChildren(); return; }  // the server serves none
      const items = list.reports || [];
      served.replaceChildren(h('h2', {}, 'On the server'), items.length
        ? h('ul', {}, items.map((r) => h('li', {}, h('a', { href: '#/reports?name=' + encodeURIComponent(r.name), onclick: (e) => {
          e.preventDefault();
          history.replaceState(null, '', '#/reports?name=' + encodeURIComponent(r.name));
          load('v1/reports/' + encodeURIComponent(r.name));
        } }, r.name), h('span', { class: 'muted' }, ` · ${(r.bytes / 1024).toFixed(1)} KiB · ${new Date(r.modified_at * 1000).toLocaleString()}`))))
        : h('p', { class: 'muted' }, 'none (the reports folder is empty)'));
    },
  };
}
