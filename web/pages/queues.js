// The queue tree (GET v1/queues): per queue its jobs and, per GPU type ("*"
// is every type together), the guarantee, limit, usage and borrowed GPUs in
// the tree's unit, with a bar of usage against the guarantee.
import { api } from '../api.js';
import { h, gpus } from '../util.js';

export const title = 'Queues';

// Parents before children, children by name; depth for the indentation.
function treeOrder(queues) {
  const byParent = new Map();
  const names = new Set(queues.map((q) => q.name));
  for (const q of queues) {
    const p = q.parent && names.has(q.parent) ? q.parent : '';
    if (!byParent.has(p)) byParent.set(p, []);
    byParent.get(p).push(q);
  }
  const out = [];
  const walk = (p, depth) => {
    for (const q of (byParent.get(p) || []).sort((a, b) => a.name.localeCompare(b.name))) {
      out.push([q, depth]);
      walk(q.name, depth + 1);
    }
  };
  walk('', 0);
  return out;
}

function usageBar(usage, guarantee, limit) {
  const scale = Math.max(usage, guarantee || 0, limit || 0, 1e-9);
  const bar = h('span', { class: 'bar', title: `usage ${gpus(usage)} of guarantee ${gpus(guarantee)}` },
    h('span', { class: guarantee !== null && usage > guarantee ? 'over' : '', style: `width:${(100 * usage / scale).toFixed(1)}%` }));
  if (guarantee) bar.append(h('i', { style: `left:${(100 * guarantee / scale).toFixed(1)}%` }));
  return bar;
}

export function render(root) {
  const head = h('p', { class: 'muted' });
  const body = h('tbody');
  const table = h('table', { id: 'queues' },
    h('thead', {}, h('tr', {},
      h('th', {}, 'queue'), h('th', { class: 'num' }, 'weight'), h('th', { class: 'num' }, 'running'),
      h('th', { class: 'num' }, 'pending'), h('th', {}, 'GPU type'), h('th', { class: 'num' }, 'guarantee'),
      h('th', { class: 'num' }, 'limit'), h('th', { class: 'num' }, 'usage'), h('th', { class: 'num' }, 'borrowed'),
      h('th', {}, 'usage / guarantee'), h('th', { class: 'num' }, 'dominant share'))),
    body);
  root.append(h('h1', {}, 'Queues'), head, table);
  return {
    title,
    async refresh() {
      const d = await api('v1/queues');
      head.textContent = `${d.queues.length} queues · figures in ${d.unit === 'normalized' ? 'normalized GPUs (' + (d.reference || 'reference') + '-equivalents)' : 'GPUs'}` +
        ' · "*" is every GPU type together; an inner queue covers its subtree.';
      const rows = [];
      for (const [q, depth] of treeOrder(d.queues)) {
        const dims = Object.entries(q.dimensions || {});
        if (!dims.length) dims.push(['*', { guarantee: q.guarantee_gpus, limit: null, usage: q.usage_gpus, borrowed: q.borrowed_gpus }]);
        dims.forEach(([type, f], k) => {
          const first = k === 0;
          rows.push(h('tr', { class: first ? '' : 'sub', dataset: { queue: q.name, type } },
            h('td', { style: `padding-left:${8 + depth * 16}px` }, first ? h('a', { href: '#/jobs?queue=' + encodeURIComponent(q.name) }, q.name) : ''),
            h('td', { class: 'num' }, first && q.weight !== undefined ? String(q.weight) : ''),
            h('td', { class: 'num', dataset: { k: 'running' } }, first ? `${q.running} (${q.running_gpus} GPUs)` : ''),
            h('td', { class: 'num', dataset: { k: 'pending' } }, first ? `${q.pending} (${q.pending_gpus} GPUs)` : ''),
            h('td', {}, type),
            h('td', { class: 'num', dataset: { k: 'guarantee' } }, gpus(f.guarantee)),
            h('td', { class: 'num', dataset: { k: 'limit' } }, gpus(f.limit)),
            h('td', { class: 'num', dataset: { k: 'usage' } }, gpus(f.usage)),
            h('td', { class: 'num', dataset: { k: 'borrowed' } }, gpus(f.borrowed)),
            h('td', {}, usageBar(f.usage || 0, f.guarantee, f.limit)),
            h('td', { class: 'num' }, first && q.dominant_share !== undefined ? (100 * q.dominant_share).toFixed(1) + '%' : '')));
        });
      }
      body.replaceChildren(...rows);
    },
  };
}
