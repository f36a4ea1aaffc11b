// The job list (GET v1/jobs, paged by id): the state filter is the server's,
// queue, tenant and name filter the page it returned. Pending jobs show why
// they wait, running ones their nodes. The filters live in the URL.
import { api } from '../api.js';
import { h, badge, duration, setQuery } from '../util.js';

export const title = 'Jobs';
const STATES = ['', 'pending', 'running', 'succeeded', 'failed', 'cancelled'];

export function render(root, { params }) {
  const f = { state: params.state || '', queue: params.queue || '', tenant: params.tenant || '', name: params.name || '' };
  let after = params.after || '';
  const pages = [];  // the `after` of the pages before this one
  const input = (k, label) => h('label', {}, label, h('input', { name: k, value: f[k], size: 14 }));
  const form = h('form', { class: 'filters', id: 'job-filters' },
    h('label', {}, 'state', h('select', { name: 'state' }, STATES.map((s) => h('option', { value: s, selected: s === f.state }, s || 'any')))),
    input('queue', 'queue'), input('tenant', 'tenant'), input('name', 'name contains'));
  const count = h('span', { class: 'muted' });
  const prev = h('button', { type: 'button' }, '‹ earlier');
  const next = h('button', { type: 'button' }, 'later ›');
  const body = h('tbody');
  const table = h('table', { id: 'jobs' },
    h('thead', {}, h('tr', {}, ['id', 'name', 'tenant', 'queue', 'state', 'age', 'GPUs', 'nodes or reason'].map((t) =>
      h('th', { class: t === 'id' || t === 'GPUs' ? 'num' : '' }, t)))),
    body);
  root.append(h('h1', {}, 'Jobs'), form, h('div', { class: 'pager' }, prev, next, count), table);

  let nextAfter = null;
  let view = null;
  const apply = () => {
    for (const el of form.elements) f[el.name] = el.value.trim();
    setQuery('jobs', { ...f, after });
  };
  form.addEventListener('input', () => { apply(); if (view) view.refresh(); });
  form.addEventListener('submit', (e) => e.preventDefault());
  form.addEventListener('change', (e) => { if (e.target.name === 'state') { after = ''; pages.length = 0; apply(); view.refresh(); } });
  next.addEventListener('click', () => { if (nextAfter !== null) { pages.push(after); after = String(nextAfter); apply(); view.refresh(); } });
  prev.addEventListener('click', () => { after = pages.length ? pages.pop() : ''; apply(); view.refresh(); });

  view = {
    title,
    async refresh() {
      const q = new URLSearchParams({ limit: '1000' });
      if (f.state) q.set('state', f.state);
      if (after) q.set('after', after);
      const d = await api('v1/jobs?' + q);
      nextAfter = d.next_after ?? null;
      next.disabled = nextAfter === null;
      prev.disabled = !after;
      const now = Date.now() / 1000;
      const rows = d.jobs.filter((j) => (!f.queue || j.queue === f.queue) && (!f.tenant || j.tenant === f.tenant) &&
        (!f.name || (j.name || '').includes(f.name)));
      count.textContent = `${rows.length} of ${d.jobs.length} jobs on this page` + (nextAfter !== null ? ' (more on later pages)' : '');
      body.replaceChildren(...rows.map((j) => h('tr', { dataset: { job: String(j.id), state: j.state } },
        h('td', { class: 'num' }, h('a', { href: '#/jobs/' + j.id }, String(j.id))),
        h('td', {}, h('a', { href: '#/jobs/' + j.id }, j.name || '')),
        h('td', {}, j.tenant || ''), h('td', {}, j.queue || ''), h('td', {}, badge(j.state)),
        h('td', {}, j.submitted_at ? duration(now - j.submitted_at) : '-'),
        h('td', { class: 'num' }, String(j.gpus)),
        h('td', { class: 'wrap' }, j.state === 'running' ? j.nodes.slice(0, 8).join(', ') + (j.nodes.length > 8 ? ` … (${j.nodes.length})` : '')
          : j.state === 'pending' ? (j.why || '') : (j.why || '')))));
    },
  };
  return view;
}
