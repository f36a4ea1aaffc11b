// The cluster as a topology heat map: one cell per node, grouped by leaf and
// spine, coloured by the share of its GPUs allocated; down nodes dark,
// quarantined ones striped. Reads GET v1/topology (columns, so 4,000 nodes
// are one small answer); a refresh with the same tree only restyles cells.
import { api } from '../api.js';
import { h, gpus, pct } from '../util.js';

export const title = 'Cluster';

// 0 idle, 1..4 quarters, 5 full.
function level(used, total) {
  if (!total) return -1;
  if (used <= 0) return 0;
  if (used >= total) return 5;
  return Math.min(4, 1 + Math.floor((4 * used) / total));
}

const STATUS = ['up', 'down', 'quarantined'];

function cellClass(used, total, status) {
  const l = level(used, total);
  let c = 'c ' + (l < 0 ? 'cpu' : 'u' + l);
  if (status === 1) c += ' down';
  if (status === 2) c += ' quar';
  return c;
}

export function render(root) {
  let shape = '';
  let cells = [];
  let data = null;
  const tiles = h('div', { class: 'tiles' });
  const typeSelect = h('select', { id: 'type-filter' }, h('option', { value: '' }, 'all GPU types'));
  const legend = h('div', { class: 'legend' },
    ...['idle', '1-25%', '26-50%', '51-75%', '76-99%', 'full'].map((t, i) => h('span', {}, h('i', { class: 'c u' + i }), t)),
    h('span', {}, h('i', { class: 'c down' }), 'down'),
    h('span', {}, h('i', { class: 'c quar' }), 'quarantined'),
    h('span', {}, h('i', { class: 'c cpu' }), 'no GPUs'),
    h('label', {}, 'highlight ', typeSelect));
  const map = h('div', { class: 'heatmap', id: 'heatmap' });
  root.append(h('h1', {}, 'Cluster'), tiles, legend, map);

  map.addEventListener('click', (e) => {
    const c = e.target.closest('.c');
    if (c && c.dataset.node) location.hash = '#/nodes?q=' + encodeURIComponent(c.dataset.node);
  });
  typeSelect.addEventListener('change', () => dim());

  function dim() {
    const want = typeSelect.value;
    const col = data.columns;
    for (let i = 0; i < cells.length; i++) {
      const t = col.gpu_type[i] >= 0 ? data.gpu_types[col.gpu_type[i]] : '';
      cells[i].classList.toggle('dim', want !== '' && t !== want);
    }
  }

  function build() {
    const col = data.columns;
    cells = new Array(data.nodes);
    map.classList.toggle('big', data.nodes > 2000);
    const spines = [];
    for (const s of data.spines) {
      const leaves = [];
      for (const l of s.leaves) {
        const cols = Math.max(4, Math.ceil(Math.sqrt(l.count * 2)));
        const grid = h('div', { class: 'cells', style: `grid-template-columns: repeat(${cols}, auto)` });
        for (let i = l.first; i < l.first + l.count; i++) {
          const c = h('i', { dataset: { node: col.name[i], i: String(i) } });
          cells[i] = c;
          grid.append(c);
        }
        const head = h('div', { class: 'h' });
        leaves.push(h('div', { class: 'leaf', dataset: { leaf: l.name, first: String(l.first), count: String(l.count) } }, head, grid));
      }
      spines.push(h('div', { class: 'spine', dataset: { spine: s.name } }, h('div', { class: 'h' }), h('div', { class: 'leaves' }, leaves)));
    }
    map.replaceChildren(...spines);
    const types = data.gpu_types;
    typeSelect.replaceChildren(h('option', { value: '' }, 'all GPU types'), ...types.map((t) => h('option', { value: t }, t)));
  }

  function paint() {
    const col = data.columns;
    const types = data.gpu_types;
    for (let i = 0; i < cells.length; i++) {
      const c = cells[i];
      const used = col.gpus_used_milli[i], total = col.gpus[i] * 1000, st = col.status[i];
      const cls = cellClass(used, total, st) + (c.classList.contains('dim') ? ' dim' : '');
      if (c.className !== cls) c.className = cls;
      if (c.dataset.used !== String(used) || c.dataset.status !== STATUS[st]) {
        c.dataset.used = String(used);
        c.dataset.status = STATUS[st];
        c.title = `${col.name[i]} · ${col.gpu_type[i] >= 0 ? types[col.gpu_type[i]] : 'CPU'} · ` +
          `${gpus(used / 1000)}/${col.gpus[i]} GPUs · ${col.tasks[i]} tasks · ${STATUS[st]}`;
      }
    }
    // Leaf and spine headers: their allocation.
    for (const s of map.children) {
      let su = 0, sg = 0;
      for (const l of s.querySelectorAll('.leaf')) {
        const first = Number(l.dataset.first), n = Number(l.dataset.count);
        let u = 0, g = 0;
        for (let i = first; i < first + n; i++) { u += col.gpus_used_milli[i]; g += col.gpus[i] * 1000; }
        su += u; sg += g;
        l.firstChild.textContent = `${l.dataset.leaf.replace(/^.*leaf-?/, '') || l.dataset.leaf} · ${g ? Math.round(100 * u / g) + '%' : '-'}`;
        l.title = `${l.dataset.leaf}: ${n} nodes, ${gpus(u / 1000)}/${g / 1000} GPUs allocated`;
      }
      const leaves = s.querySelectorAll('.leaf').length;
      s.firstChild.replaceChildren(s.dataset.spine + ' ',
        h('span', { class: 'muted' }, `${leaves} leaves · ${gpus(su / 1000)}/${sg / 1000} GPUs · ${pct(su, sg)}`));
    }
  }

  function summary() {
    const col = data.columns;
    const perType = data.gpu_types.map(() => [0, 0]);
    for (let i = 0; i < data.nodes; i++) {
      const t = col.gpu_type[i];
      if (t >= 0) { perType[t][0] += col.gpus_used_milli[i]; perType[t][1] += col.gpus[i] * 1000; }
    }
    const tile = (k, v, id) => h('div', { class: 'tile', id }, h('div', { class: 'v' }, v), h('div', { class: 'k' }, k));
    tiles.replaceChildren(
      tile('nodes', String(data.nodes), 'tile-nodes'),
      tile('GPUs allocated', `${gpus(data.gpus_used_milli / 1000)} / ${data.gpus}`, 'tile-gpus'),
      tile('allocation', pct(data.gpus_used_milli, data.gpus * 1000), 'tile-alloc'),
      tile('nodes down', String(data.nodes_down), 'tile-down'),
      tile('quarantined', String(data.nodes_quarantined), 'tile-quarantined'),
      ...data.gpu_types.map((t, i) => tile(t, `${gpus(perType[i][0] / 1000)} / ${perType[i][1] / 1000} · ${pct(perType[i][0], perType[i][1])}`)));
  }

  return {
    title,
    async refresh() {
      data = await api('v1/topology');
      const s = JSON.stringify([data.nodes, data.gpu_types, data.spines]) + data.columns.name.join(',');
      if (s !== shape) { shape = s; build(); dim(); }
      paint();
      summary();
      map.dataset.nodes = String(data.nodes);
      map.dataset.gpusUsedMilli = String(data.gpus_used_milli);
    },
  };
}
