// The nodes (GET v1/nodes): filter by name, state and GPU type, sort, 200 a
// page; each row its spine and leaf, GPUs allocated, tasks, failures and the
// age of its last heartbeat.
import { api } from '../api.js';
import { h, gpus, setQuery } from '../util.js';

export const title = 'Nodes';
const PAGE = 200;
const STATES = ['', 'up', 'down', 'quarantined', 'idle', 'busy', 'full'];

function stateOf(n) { return n.quarantined ? 'quarantined' : n.up ? 'up' : 'down'; }

export function render(root, { params }) {
  const f = { q: params.q || '', state: params.state || '', type: params.type || '', sort: params.sort || 'name' };
  let page = 0;
  let types = [];
  const typeSelect = h('select', { name: 'type' });
  const form = h('form', { class: 'filters', id: 'node-filters' },
    h('label', {}, 'name contains', h('input', { name: 'q', value: f.q, size: 18 })),
    h('label', {}, 'state', h('select', { name: 'state' }, STATES.map((s) => h('option', { value: s, selected: s === f.state }, s || 'any')))),
    h('label', {}, 'GPU type', typeSelect),
    h('label', {}, 'sort', h('select', { name: 'sort' }, [['name', 'name'], ['used', 'most allocated'], ['free', 'most free'], ['failures', 'failures']].map(([v, t]) =>
      h('option', { value: v, selected: v === f.sort }, t)))));
  const count = h('span', { class: 'muted' });
  const prev = h('button', { type: 'button' }, '‹');
  const next = h('button', { type: 'button' }, '›');
  const body = h('tbody');
  root.append(h('h1', {}, 'Nodes'), form, h('div', { class: 'pager' }, prev, next, count),
    h('table', { id: 'nodes' }, h('thead', {}, h('tr', {}, ['node', 'GPU type', 'spine', 'leaf', 'GPUs allocated', '', 'tasks', 'state', 'failures', 'heartbeat'].map((t) =>
      h('th', { class: ['tasks', 'failures', 'GPUs allocated'].includes(t) ? 'num' : '' }, t)))), body));
  let data = null;
  const draw = () => {
    if (!data) return;
    let rows = data.filter((n) => (!f.q || n.name.includes(f.q)) && (!f.type || n.gpu_type === f.type) && (!f.state ||
      (f.state === 'idle' ? n.gpus_used_milli === 0 && n.gpus > 0 : f.state === 'busy' ? n.gpus_used_milli > 0
        : f.state === 'full' ? n.gpus > 0 && n.gpus_used_milli >= n.gpus * 1000 : stateOf(n) === f.state)));
    if (f.sort === 'used') rows = rows.slice().sort((a, b) => b.gpus_used_milli - a.gpus_used_milli || a.name.localeCompare(b.name));
    if (f.sort === 'free') rows = rows.slice().sort((a, b) => (b.gpus * 1000 - b.gpus_used_milli) - (a.gpus * 1000 - a.gpus_used_milli) || a.name.localeCompare(b.name));
    if (f.sort === 'failures') rows = rows.slice().sort((a, b) => b.failures - a.failures || a.name.localeCompare(b.name));
    const pages = Math.max(1, Math.ceil(rows.length / PAGE));
    page = Math.min(page, pages - 1);
    prev.disabled = page === 0;
    next.disabled = page >= pages - 1;
    count.textContent = `${rows.length} of ${data.length} nodes · page ${page + 1} of ${pages}`;
    body.replaceChildren(...rows.slice(page * PAGE, (page + 1) * PAGE).map((n) => {
      const s = stateOf(n);
      return h('tr', { dataset: { node: n.name } },
        h('td', {}, n.name), h('td', {}, n.gpu_type || '-'), h('td', {}, n.spine || ''), h('td', {}, n.leaf || ''),
        h('td', { class: 'num' }, `${gpus(n.gpus_used_milli / 1000)} / ${n.gpus}`),
        h('td', {}, h('span', { class: 'bar' }, h('span', { style: `width:${n.gpus ? (100 * n.gpus_used_milli / (n.gpus * 1000)).toFixed(1) : 0}%` }))),
        h('td', { class: 'num' }, String(n.tasks)),
        h('td', {}, s === 'up' ? 'up' : h('span', { class: 'badge ' + s }, s)),
        h('td', { class: 'num' }, String(n.failures)),
        h('td', {}, n.heartbeat_age_s !== undefined ? n.heartbeat_age_s.toFixed(1) + ' s ago' : '-'));
    }));
  };
  form.addEventListener('input', () => {
    for (const el of form.elements) f[el.name] = el.value.trim();
    page = 0;
    setQuery('nodes', { ...f, sort: f.sort === 'name' ? '' : f.sort });
    draw();
  });
  form.addEventListener('submit', (e) => e.preventDefault());
  prev.addEventListener('click', () => { page--; draw(); });
  next.addEventListener('click', () => { page++; draw(); });
  return {
    title,
    async refresh() {
      data = (await api('v1/nodes')).nodes;
      const t = [...new Set(data.map((n) => n.gpu_type).filter(Boolean))].sort();
      if (t.join() !== types.join()) {
        types = t;
        typeSelect.replaceChildren(h('option', { value: '' }, 'any'), ...t.map((x) => h('option', { value: x, selected: x === f.type }, x)));
      }
      draw();
    },
  };
}
