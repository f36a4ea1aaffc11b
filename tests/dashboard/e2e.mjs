// The web dashboard end to end: `berth serve` on a 4,000-node virtual cluster
// (4000x8:H100/leaf=32/spine=16) with a queue tree and 2,100 jobs (a seeded third cancelled), one
// left pending on its queue's limit; Debian's Chromium driven by
// playwright-core checks every page against the JSON API and takes PNG
// screenshots. Started by dashboard_e2e.sh:
//   node e2e.mjs --berth BERTH --src SOURCE_DIR --out OUT_DIR --chromium /usr/bin/chromium
// Bounded: a watchdog ends the run after 360 s; the server is stopped by its PID.
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1]]);
  return acc;
}, []));
const { berth, src, out } = args;
const executablePath = args.chromium || '/usr/bin/chromium';
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'berth-dashboard-'));
const TOKEN = 'dashboard-test-token';
let server = null;
let browser = null;
const checks = [];

function log(...m) { console.log(...m); }
function check(ok, what) {
  if (!ok) throw new Error('FAIL: ' + what);
  checks.push(what);
  log('ok  ' + what);
}

async function cleanup() {
  if (browser) await browser.close().catch(() => {});
  if (server && server.exitCode === null) {
    server.kill('SIGTERM');
    await new Promise((r) => { server.once('exit', r); setTimeout(r, 10000); });
  }
  fs.rmSync(work, { recursive: true, force: true });
}
const watchdog = setTimeout(async () => {
  console.error('FAIL: timed out after 360 s');
  await cleanup();
  process.exit(1);
}, 360000);

// --- the server ---------------------------------------------------------------
async function startServer() {
  fs.writeFileSync(path.join(work, 'token'), TOKEN + '\n');
  const reports = path.join(work, 'reports');
  fs.mkdirSync(reports);
  // Two small reports for the Reports page (a few hundred milliseconds).
  execFileSync(berth, ['simulate', '--cluster', path.join(src, 'examples/clusters/k8s-nodes-16x8.json'),
    '--trace', path.join(src, 'examples/traces/k8s-gangs.jsonl'), '--mode', 'replay', '--policy', 'topology,fifo',
    '--catalog', path.join(src, 'data/accelerators.yaml'),
    '--json', path.join(reports, 'gangs.json'), '--report', path.join(reports, 'gangs.html'), '--quiet'], { stdio: 'ignore' });
  const logFile = path.join(work, 'serve.log');
  const fd = fs.openSync(logFile, 'w');
  server = spawn(berth, ['serve', '--listen', '127.0.0.1:0', '--store', `sqlite:${work}/data/berth.db`,
    '--token-file', path.join(work, 'token'), '--cluster', '4000x8:H100/leaf=32/spine=16', '--virtual-nodes',
    '--queues', path.join(src, 'tests/dashboard/queues.yaml'), '--reports', reports,
    '--catalog', path.join(src, 'data/accelerators.yaml')], { stdio: ['ignore', 'ignore', fd] });
  for (let i = 0; i < 600; i++) {
    const m = fs.readFileSync(logFile, 'utf8').match(/"event":"listening"[^}]*?"port":(\d+)/);
    if (m) {
      const url = `http://127.0.0.1:${m[1]}`;
      for (let k = 0; k < 600; k++) {
        const r = await fetch(url + '/readyz').catch(() => null);
        if (r && r.ok) return url;
        await new Promise((res) => setTimeout(res, 100));
      }
    }
    if (server.exitCode !== null) break;
    await new Promise((res) => setTimeout(res, 100));
  }
  throw new Error('server did not start:\n' + fs.readFileSync(logFile, 'utf8'));
}

let URL_ = '';
async function get(p) {
  const r = await fetch(URL_ + p);
  if (!r.ok) throw new Error(`GET ${p}: ${r.status} ${await r.text()}`);
  return r.json();
}
async function submit(job) {
  const r = await fetch(URL_ + '/v1/jobs', { method: 'POST', headers: { Authorization: 'Bearer ' + TOKEN, 'Content-Type': 'application/json' }, body: JSON.stringify(job) });
  const body = await r.json();
  if (r.status !== 201 && r.status !== 200) throw new Error(`submit ${job.name}: ${r.status} ${JSON.stringify(body)}`);
  return body.id;
}
async function waitFor(what, fn, seconds = 60) {
  for (let i = 0; i < seconds * 5; i++) {
    const v = await fn();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error('FAIL: timed out waiting for ' + what);
}

// The jobs: research borrows past its guarantee, production runs small
// tasks, batch fills its 64-GPU limit and its next job waits.
function workload() {
  const jobs = [];
  const job = (name, tenant, count, gpus) => ({ name, tenant, duration_s: 7200, groups: [{ count, gpus }] });
  for (let i = 0; i < 400; i++) jobs.push(job(`nlp-${i}`, 'alice', 4, 8));
  for (let i = 0; i < 200; i++) jobs.push(job(`vision-${i}`, 'bob', 2, 8));
  for (let i = 0; i < 1200; i++) jobs.push(job(`serve-${i}`, 'svc', 1, 1 + (i % 3)));
  for (let i = 0; i < 300; i++) jobs.push(job(`embed-${i}`, 'svc', 1, 4));
  for (let i = 0; i < 4; i++) jobs.push(job(`etl-${i}`, 'carol', 2, 8));
  return jobs;
}

function level(used, total) {
  if (!total) return 'cpu';
  if (used <= 0) return 'u0';
  if (used >= total) return 'u5';
  return 'u' + Math.min(4, 1 + Math.floor((4 * used) / total));
}

async function main() {
  URL_ = await startServer();
  log('serving at ' + URL_);
  const jobs = workload();
  const submitted = [];
  for (let i = 0; i < jobs.length; i += 16) {
    const batch = jobs.slice(i, i + 16);
    const got = await Promise.all(batch.map(submit));
    got.forEach((id, k) => submitted.push({ id, tenant: batch[k].tenant }));
  }
  // Cancel a seeded third of the research and production jobs: holes all over the map.
  let seed = 42;
  const rnd = () => { seed = (seed * 48271) % 2147483647; return seed / 2147483647; };
  const victims = submitted.filter((s) => s.tenant !== 'carol' && rnd() < 0.35).map((s) => s.id);
  for (let i = 0; i < victims.length; i += 16)
    await Promise.all(victims.slice(i, i + 16).map((id) => fetch(URL_ + '/v1/jobs/' + id, { method: 'DELETE', headers: { Authorization: 'Bearer ' + TOKEN } })));
  log(`submitted ${submitted.length} jobs, cancelled ${victims.length}`);
  const pendingId = await submit({ name: 'etl-waits', tenant: 'carol', duration_s: 7200, groups: [{ count: 2, gpus: 8 }] });
  await waitFor('every job but one placed', async () => {
    const p = await get('/v1/jobs?state=pending');
    const w = await get(`/v1/jobs/${pendingId}/why`);
    const r = await get('/v1/jobs?state=running&limit=10000');
    return p.jobs.length === 1 && p.jobs[0].id === pendingId && w.verdict !== null && r.jobs.length === submitted.length - victims.length;
  }, 120);
  const why = await get(`/v1/jobs/${pendingId}/why`);
  log(`pending job ${pendingId}: ${why.why}`);

  browser = await chromium.launch({ executablePath, args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'] });
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error' && !/401/.test(m.text())) pageErrors.push(m.text()); });
  page.setDefaultTimeout(30000);

  // --- the heat map ---------------------------------------------------------
  await page.goto(URL_ + '/#/cluster');
  await page.waitForSelector('#heatmap[data-nodes]');
  const nodes = (await get('/v1/nodes')).nodes;
  const cells = await page.$$eval('#heatmap .c[data-node]', (els) => els.map((e) => ({
    name: e.dataset.node, used: Number(e.dataset.used), status: e.dataset.status, cls: e.className,
    leaf: e.closest('.leaf').dataset.leaf, spine: e.closest('.spine').dataset.spine })));
  check(nodes.length === 4000, `/v1/nodes lists 4000 nodes`);
  check(cells.length === nodes.length, `the heat map has ${cells.length} node cells, /v1/nodes ${nodes.length}`);
  const byName = new Map(cells.map((c) => [c.name, c]));
  let same = 0, used = 0;
  for (const n of nodes) {
    const c = byName.get(n.name);
    if (c && c.used === n.gpus_used_milli && c.leaf === n.leaf && c.spine === n.spine && c.status === 'up' &&
        c.cls.split(' ').includes(level(n.gpus_used_milli, n.gpus * 1000))) same++;
    used += n.gpus_used_milli;
  }
  check(same === nodes.length, `every cell has its node's allocation, leaf, spine, state and colour (${same}/${nodes.length})`);
  const spines = new Set(nodes.map((n) => n.spine)), leaves = new Set(nodes.map((n) => n.spine + '/' + n.leaf));
  check(await page.locator('#heatmap .spine').count() === spines.size, `${spines.size} spine groups`);
  check(await page.locator('#heatmap .leaf').count() === leaves.size, `${leaves.size} leaf groups`);
  const busy = nodes.filter((n) => n.gpus_used_milli > 0).length;
  check(busy > 500 && busy < 4000, `${busy} nodes allocated, ${4000 - busy} idle`);
  check(Number(await page.getAttribute('#heatmap', 'data-gpus-used-milli')) === used, `the page's total allocation ${used / 1000} GPUs is the API's`);
  check((await page.textContent('#tile-nodes .v')) === '4000', 'the nodes tile says 4000');
  await page.screenshot({ path: path.join(out, 'heatmap.png'), fullPage: true });

  // Live updates: a job submitted now shows up without a reload.
  const liveId = await submit({ name: 'live', tenant: 'svc', duration_s: 7200, groups: [{ count: 1, gpus: 8 }] });
  await page.waitForFunction((want) => Number(document.querySelector('#heatmap').dataset.gpusUsedMilli) === want, used + 8000, { timeout: 20000 });
  check(true, 'the heat map updates itself: +8 GPUs after a submission, no reload');

  // --- queues ---------------------------------------------------------------
  await page.goto(URL_ + '/#/queues');
  await page.waitForSelector('#queues tbody tr[data-queue]');
  await page.waitForFunction(() => Number(document.querySelector('[data-page=queues]').dataset.loaded) >= 1);
  const queues = await get('/v1/queues');
  const rows = await page.$$eval('#queues tbody tr', (trs) => trs.map((tr) => {
    const v = {};
    for (const td of tr.querySelectorAll('td[data-k]')) v[td.dataset.k] = td.textContent;
    return { queue: tr.dataset.queue, type: tr.dataset.type, ...v };
  }));
  const num = (t) => (t === '-' ? null : Number(t));
  const close = (a, b) => (a === null || b === null ? a === b : Math.abs(a - b) < 1e-3);
  let dims = 0, matched = 0;
  for (const q of queues.queues) {
    for (const [type, f] of Object.entries(q.dimensions)) {
      dims++;
      const r = rows.find((x) => x.queue === q.name && x.type === type);
      if (r && close(num(r.guarantee), f.guarantee) && close(num(r.limit), f.limit) && close(num(r.usage), f.usage) &&
          close(num(r.borrowed), f.borrowed)) matched++;
      else log('mismatch', q.name, type, JSON.stringify(f), JSON.stringify(r));
    }
    const first = rows.find((x) => x.queue === q.name);
    if (!first || first.running !== `${q.running} (${q.running_gpus} GPUs)` || first.pending !== `${q.pending} (${q.pending_gpus} GPUs)`)
      log('job counts differ', q.name, JSON.stringify(first));
    else matched += 0;
  }
  check(queues.queues.length === 5 && rows.length === dims, `the queue page has a row per queue and GPU type (${rows.length})`);
  check(matched === dims, `guarantee, limit, usage and borrowed match /v1/queues in every row (${matched}/${dims})`);
  const research = queues.queues.find((q) => q.name === 'research');
  check(research.dimensions['*'].borrowed > 0, `research borrows ${research.dimensions['*'].borrowed} GPUs over its guarantee`);
  const batch = rows.find((x) => x.queue === 'batch');
  const apiBatch = queues.queues.find((q) => q.name === 'batch');
  check(batch.pending === `${apiBatch.pending} (${apiBatch.pending_gpus} GPUs)` && apiBatch.pending === 1, 'batch shows its one pending job');
  await page.screenshot({ path: path.join(out, 'queues.png'), fullPage: true });

  // --- jobs and the pending job's page -------------------------------------
  await page.goto(URL_ + '/#/jobs?state=pending');
  await page.waitForSelector('#jobs tbody tr[data-job]');
  const listed = await page.$$eval('#jobs tbody tr[data-job]', (trs) => trs.map((t) => Number(t.dataset.job)));
  check(listed.length === 1 && listed[0] === pendingId, `the jobs page filtered to pending lists job ${pendingId} only`);
  await page.goto(URL_ + '/#/jobs?tenant=carol');
  await page.waitForFunction(() => document.querySelectorAll('#jobs tbody tr[data-job]').length === 5);
  check(true, 'the tenant filter lists carol\'s 5 jobs');

  await page.goto(URL_ + `/#/jobs/${pendingId}`);
  await page.waitForSelector('#why-text');
  const shownWhy = await page.textContent('#why-text');
  const apiWhy = (await get(`/v1/jobs/${pendingId}/why`)).why;
  check(shownWhy === apiWhy && apiWhy.length > 0, `the pending job's page shows the API's why: "${apiWhy}"`);
  check((await page.textContent('#why-code')) === why.verdict.code, `and its verdict code ${why.verdict.code}`);
  await page.screenshot({ path: path.join(out, 'pending-job.png'), fullPage: true });

  // A running job's placements, then cancel: 401 without the token, done with it.
  await page.goto(URL_ + `/#/jobs/${liveId}`);
  await page.waitForSelector('#placement-table tbody tr');
  const live = await get(`/v1/jobs/${liveId}`);
  const placed = await page.$$eval('#placement-table tbody tr', (trs) => trs.map((t) => t.children[1].textContent));
  check(placed.length === live.placements.length && placed[0] === live.placements[0].node, `job ${liveId}'s placements: ${placed.join(', ')}`);
  page.on('dialog', (d) => d.accept());
  await page.click('#cancel');
  await page.waitForSelector('#token-dialog[open]');
  check((await get(`/v1/jobs/${liveId}`)).state === 'running', 'cancel without the token is refused (401) and asks for it');
  await page.fill('#token-input', TOKEN);
  await page.click('#token-dialog button[value=save]');
  await page.click('#cancel');
  await waitFor('the cancel', async () => (await get(`/v1/jobs/${liveId}`)).state === 'cancelled', 20);
  check(true, 'with the token saved in the browser, cancel works');

  // --- nodes ----------------------------------------------------------------
  await page.goto(URL_ + '/#/nodes?state=idle');
  await page.waitForSelector('#nodes tbody tr');
  const idle = (await get('/v1/nodes')).nodes.filter((n) => n.gpus_used_milli === 0).length;
  const countText = await page.textContent('.pager .muted');
  check(countText.startsWith(`${idle} of 4000 nodes`), `the nodes page filtered to idle: "${countText}"`);

  // --- reports --------------------------------------------------------------
  await page.goto(URL_ + '/#/reports');
  await page.waitForSelector('#served a');
  await page.click('#served a:text("gangs.json")');
  await page.waitForSelector('#report-table tbody tr');
  const report = JSON.parse(fs.readFileSync(path.join(work, 'reports/gangs.json'), 'utf8'));
  const policies = await page.$$eval('#report-table tbody tr', (trs) => trs.map((t) => t.children[0].textContent));
  check(policies.join() === report.map((r) => r.policy).join(), `a served JSON report shows its policies: ${policies.join(', ')}`);
  check(await page.locator('#report svg.chart').count() >= 1, 'and its allocation curve');
  await page.setInputFiles('input[type=file]', path.join(work, 'reports/gangs.html'));
  await page.waitForSelector('iframe.report');
  const frame = page.frameLocator('iframe.report');
  check((await frame.locator('body').textContent()).includes('topology'), 'an uploaded HTML report renders in its frame');
  await page.screenshot({ path: path.join(out, 'reports.png') });

  check(pageErrors.length === 0, 'no script errors on any page' + (pageErrors.length ? ': ' + pageErrors.join('; ') : ''));
  log(`PASS: ${checks.length} checks; screenshots in ${out}`);
}

main().then(async () => {
  clearTimeout(watchdog);
  await cleanup();
}, async (e) => {
  console.error(e.stack || String(e));
  try { console.error(fs.readFileSync(path.join(work, 'serve.log'), 'utf8').split('\n').slice(-20).join('\n')); } catch { /* gone */ }
  clearTimeout(watchdog);
  await cleanup();
  process.exit(1);
});
