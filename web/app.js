// The dashboard's shell: the hash router (#/cluster, #/queues, #/jobs,
// #/jobs/ID, #/nodes, #/reports), live updates (each page's refresh() every
// few seconds while the tab is visible), the status line and the token dialog.
import { token, setToken } from './api.js';
import * as cluster from './pages/cluster.js';
import * as queues from './pages/queues.js';
import * as jobs from './pages/jobs.js';
import * as job from './pages/job.js';
import * as nodes from './pages/nodes.js';
import * as reports from './pages/reports.js';

const main = document.getElementById('main');
const banner = document.getElementById('banner');
const updated = document.getElementById('updated');
const intervalSelect = document.getElementById('interval');
let current = null;   // {route, page, view}
let timer = null;
let generation = 0;   // a route change makes older refreshes stale

function parseHash() {
  const raw = location.hash.replace(/^#\/?/, '');
  const [path, query] = raw.split('?');
  const parts = path.split('/').filter(Boolean);
  const params = Object.fromEntries(new URLSearchParams(query || ''));
  if (parts[0] === 'jobs' && parts[1]) return { route: 'job', nav: 'jobs', id: parts[1], params };
  const route = ['cluster', 'queues', 'jobs', 'nodes', 'reports'].includes(parts[0]) ? parts[0] : 'cluster';
  return { route, nav: route, params };
}

const pages = { cluster, queues, jobs, job, nodes, reports };

function showError(e) {
  banner.hidden = false;
  banner.textContent = e.status === 503 ? 'The server is not serving reads: ' + e.message : String(e.message || e);
}

async function refresh() {
  if (!current || !current.view.refresh) return;
  const gen = generation;
  try {
    await current.view.refresh();
    if (gen !== generation) return;
    banner.hidden = true;
    updated.textContent = 'updated ' + new Date().toLocaleTimeString();
    current.root.dataset.loaded = String(Number(current.root.dataset.loaded || 0) + 1);
  } catch (e) {
    if (gen === generation) showError(e);
  }
}

function schedule() {
  clearTimeout(timer);
  const ms = Number(intervalSelect.value);
  if (!ms || !current || current.view.live === false) return;
  timer = setTimeout(async () => {
    if (!document.hidden) await refresh();
    schedule();
  }, ms);
}

async function route() {
  const r = parseHash();
  generation++;
  if (current && current.view.stop) current.view.stop();
  for (const a of document.querySelectorAll('#nav a')) a.classList.toggle('active', a.dataset.route === r.nav);
  const root = document.createElement('section');
  root.dataset.page = r.route;
  main.replaceChildren(root);
  const view = pages[r.route].render(root, r);
  current = { route: r.route, root, view };
  document.title = 'Berth · ' + (view.title || r.route);
  await refresh();
  schedule();
}

window.addEventListener('hashchange', route);
document.addEventListener('visibilitychange', () => { if (!document.hidden) refresh(); });
intervalSelect.addEventListener('change', () => {
  try { localStorage.setItem('berth.interval', intervalSelect.value); } catch { /* storage off */ }
  schedule();
});
try {
  const saved = localStorage.getItem('berth.interval');
  if (saved !== null && [...intervalSelect.options].some((o) => o.value === saved)) intervalSelect.value = saved;
} catch { /* storage off */ }

// The token dialog: saved in local storage, sent as a bearer token by api().
const dialog = document.getElementById('token-dialog');
const input = document.getElementById('token-input');
const tokenButton = document.getElementById('token-button');
function showTokenState() { tokenButton.textContent = token() ? 'Token ✓' : 'Token'; }
tokenButton.addEventListener('click', () => { input.value = token(); dialog.showModal(); });
dialog.addEventListener('close', () => {
  if (dialog.returnValue === 'save') setToken(input.value.trim());
  if (dialog.returnValue === 'clear') setToken('');
  showTokenState();
});
export function askToken() { input.value = token(); dialog.showModal(); }
window.berthAskToken = askToken;
showTokenState();
route();
