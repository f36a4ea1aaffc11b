// One job (GET v1/jobs/ID and v1/jobs/ID/why): its facts, why it waits (the
// scheduler's last verdict: code, plugin, reason, the nodes each filter
// rejected, jobs ahead), its placements (task -> node, GPUs) and its spec.
// Cancel sends DELETE v1/jobs/ID with the saved token.
import { api } from '../api.js';
import { h, badge, gpus, when, duration } from '../util.js';

export const title = 'Job';

export function render(root, { id }) {
  const head = h('h1', {});
  const facts = h('dl', { class: 'facts' });
  const why = h('div', { class: 'panel why', id: 'why', hidden: true });
  const placements = h('div', { id: 'placements' });
  const spec = h('pre', { class: 'mono' });
  const actions = h('div', { class: 'pager' });
  root.append(h('p', {}, h('a', { href: '#/jobs' }, '‹ jobs')), head, actions, h('div', { class: 'panel' }, facts), why,
    h('h2', {}, 'Placements'), placements, h('details', {}, h('summary', {}, 'spec'), spec));

  const cancel = h('button', { type: 'button', id: 'cancel' }, 'Cancel job');
  const msg = h('span', { class: 'muted' });
  actions.append(cancel, msg);
  let view = null;
  cancel.addEventListener('click', async () => {
    if (!confirm(`Cancel job ${id}?`)) return;
    try {
      await api('v1/jobs/' + encodeURIComponent(id), { method: 'DELETE' });
      msg.textContent = 'cancelled';
      view.refresh();
    } catch (e) {
      msg.textContent = e.message;
      if (e.status === 401 && window.berthAskToken) window.berthAskToken();
    }
  });

  view = {
    title: 'Job ' + id,
    async refresh() {
      const [j, w] = await Promise.all([api('v1/jobs/' + encodeURIComponent(id)), api('v1/jobs/' + encodeURIComponent(id) + '/why').catch(() => null)]);
      head.replaceChildren(`Job ${j.id} `, h('span', { class: 'muted' }, j.name || ''), ' ', badge(j.state));
      cancel.hidden = !(j.state === 'pending' || j.state === 'running');
      const now = Date.now() / 1000;
      const f = [
        ['tenant', j.tenant], ['queue', j.queue], ['GPUs', String(j.gpus)], ['nodes', String((j.nodes || []).length)],
        ['submitted', when(j.submitted_at)], ['age', j.submitted_at ? duration(now - j.submitted_at) : '-'],
        ['started', when(j.started_at)], ['finished', when(j.finished_at)],
        ['starts', j.starts ?? '-'], ['requeues', j.requeues ?? '-'],
        ['preemptions', j.preemptions ?? '-'], ['idempotency key', j.idempotency_key || '-'],
      ];
      if (j.reason) f.push(['reason', j.reason]);
      if (j.unfit) f.push(['unfit', j.unfit]);
      facts.replaceChildren(...f.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v ?? '-')]));

      const text = w ? w.why : j.why;
      why.hidden = j.state !== 'pending';
      if (j.state === 'pending') {
        const v = j.verdict || (w && w.verdict);
        const parts = [h('h2', { style: 'margin-top:0' }, 'Why pending'), h('div', { class: 'text', id: 'why-text' }, text || '')];
        if (v) {
          parts.push(h('dl', { class: 'facts' },
            h('dt', {}, 'verdict'), h('dd', { id: 'why-code' }, v.code || '-'),
            h('dt', {}, 'plugin'), h('dd', {}, v.plugin || '-'),
            h('dt', {}, 'attempts'), h('dd', {}, String(v.attempts ?? '-')),
            h('dt', {}, 'jobs ahead'), h('dd', {}, w && w.pending_ahead !== undefined ? String(w.pending_ahead) : '-')));
          if (v.rejects && v.rejects.length)
            parts.push(h('table', { id: 'rejects', style: 'margin-top:8px' }, h('thead', {}, h('tr', {}, h('th', {}, 'rejected because'), h('th', { class: 'num' }, 'nodes'))),
              h('tbody', {}, v.rejects.map((r) => h('tr', {}, h('td', { class: 'wrap' }, r.reason), h('td', { class: 'num' }, String(r.nodes)))))));
        } else {
          parts.push(h('p', { class: 'muted' }, 'Not tried by the scheduler yet.'));
        }
        why.replaceChildren(...parts);
      }

      const p = j.placements || [];
      if (!p.length) placements.replaceChildren(h('p', { class: 'muted' }, j.state === 'running' ? 'placed by an external binder' : 'not placed'));
      else {
        const shown = p.slice(0, 2000);
        placements.replaceChildren(h('table', { id: 'placement-table' },
          h('thead', {}, h('tr', {}, h('th', { class: 'num' }, 'task'), h('th', {}, 'node'), h('th', {}, 'GPUs'), h('th', { class: 'num' }, 'share of each GPU'))),
          h('tbody', {}, shown.map((t) => h('tr', {},
            h('td', { class: 'num' }, String(t.task)),
            h('td', {}, h('a', { href: '#/nodes?q=' + encodeURIComponent(t.node) }, t.node)),
            h('td', { class: 'mono' }, t.gpus.join(',')),
            h('td', { class: 'num' }, gpus(t.milli_per_gpu / 1000)))))),
        p.length > shown.length ? h('p', { class: 'muted' }, `first ${shown.length} of ${p.length} tasks`) : '');
      }
      spec.textContent = JSON.stringify(j.spec ?? {}, null, 2);
    },
  };
  return view;
}
