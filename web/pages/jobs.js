// The job list (GET v1/jobs, paged by id): the state filter is the server's,
// queue, tenant and name filter what it returns (reading on until a page is
// full, at most SCAN jobs a refresh). Pending jobs show why
// they wait, running ones their nodes. The filters live in the URL.
import { api } from '../api.js';
import { h, badge, duration, setQuery } from '../util.js';

export const title = 'Jobs';
const STATES = ['', 'pending', 'running', 'succeeded', 'failed', 'cancelled'];
const PAGE = 1000;   // jobs shown a page
const SCAN = 50000; // jobs read at most per refresh to fill a filtered page

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
      // With a queue, tenant or name filter, later pages are read too (up to
      // SCAN jobs) until a page's worth of matches is found.
      const filtered = f.queue || f.tenant || f.name;
      const match = (j) => (!f.queue || j.queue === f.queue) && (!f.tenant || j.tenant === f.tenant) &&
        (!f.name || (j.name || '').includes(f.name));
      let from = after, scanned = 0, rows = [];
      nextAfter = null;
      for (;;) {
        const q = new URLSearchParams({ limit: filtered ? '5000' : String(PAGE) });
        if (f.state) q.set('state', f.state);
        if (from) q.set('after', from);
        const d = await api('v1/jobs?' + q);
        scanned += d.jobs.length;
        for (const j of d.jobs) if (rows.length < PAGE && match(j)) { rows.push(j); nextAfter = j.id; }
        if (d.next_after === undefined || d.next_after === null) { if (rows.length < PAGE) nextAfter = null; break; }
        if (!filtered) { nextAfter = d.next_after; break; }
        if (rows.length >= PAGE) break;
        if (scanned >= SCAN) { nextAfter = d.next_after; break; }
        from = String(d.next_after);
      }
      next.disabled = nextAfter === null;
      prev.disabled = !after;
      const now = Date.now() / 1000;
      count.textContent = filtered ? `${rows.length} matching of ${scanned} jobs read` + (nextAfter !== null ? ' (more on later pages)' : '')
        : `${rows.length} jobs` + (nextAfter !== null ? ' (more on later pages)' : '');
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
