// The console's user view: one user's history from one caller, read from
// the API's own route, GET /v1/users/{userId}/notifications, as the caller
// (the local X-Herald-Dev-Caller header): the same answer a service or
// `herald user history` gets, with no query path of the console's own.
// Each notification with every channel's status, reason, attempts,
// provider and times, and its decision trail in a <details>.

import { $, el, pill, time, getJSON, devCallerOf } from '/_dev/console/dom.js';

const params = new URLSearchParams(location.search);
const user = params.get('id') || '';
const filters = ['type', 'channel', 'status'].filter((f) => params.get(f));
let caller = params.get('caller') || '';
let pages = 1; // pages shown: a refresh reloads as many
let cursor = ''; // the next page's, after the last shown
const openTrails = new Set(); // "<id>/<channel>" whose trail is open

async function history(after) {
  const q = new URLSearchParams({ limit: '25' });
  for (const f of filters) q.set(f, params.get(f));
  if (after) q.set('cursor', after);
  const r = await fetch('/v1/users/' + encodeURIComponent(user) + '/notifications?' + q, {
    cache: 'no-store', headers: { 'X-Herald-Dev-Caller': caller } });
  const body = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error((body.code || r.status) + (body.detail ? ': ' + body.detail : ''));
  return body;
}

function stepLine(s) {
  return [time(s.at), s.status + (s.reason ? ': ' + s.reason : ''), s.dueAt && 'until ' + time(s.dueAt), s.error, s.note]
    .filter(Boolean).join(' · ');
}

function delivery(id, ch, d) {
  const key = id + '/' + ch;
  const p = pill(ch + ': ' + d.status + (d.reason ? ' (' + d.reason + ')' : ''), d.status);
  p.dataset.channel = ch;
  p.dataset.status = d.status;
  p.dataset.reason = d.reason || '';
  const facts = [d.decision, d.attempts ? 'attempts ' + d.attempts : '', d.provider && 'provider ' + d.provider,
    d.queuedAt && 'queued ' + time(d.queuedAt), d.sentAt && 'sent ' + time(d.sentAt), d.feedbackAt && d.status + ' ' + time(d.feedbackAt),
    !d.sentAt && d.dueAt && 'due ' + time(d.dueAt)].filter(Boolean);
  const trail = el('details', { class: 'trail', 'data-trail': key });
  trail.open = openTrails.has(key);
  trail.addEventListener('toggle', () => (trail.open ? openTrails.add(key) : openTrails.delete(key)));
  trail.append(el('summary', {}, 'trail (' + (d.trail || []).length + ' steps)'),
    el('ol', {}, ...(d.trail || []).map((s) => el('li', { 'data-step': s.status }, stepLine(s)))));
  return el('div', { class: 'delivery', 'data-channel': ch }, p, el('span', { class: 'facts' }, facts.join(' · ')), trail);
}

function row(n) {
  const ds = el('td', { class: 'deliveries' });
  for (const ch of Object.keys(n.deliveries || {}).sort()) ds.append(delivery(n.id, ch, n.deliveries[ch]));
  return el('tr', { 'data-id': n.id }, el('td', {}, time(n.createdAt)), el('td', {}, el('code', {}, n.id)), el('td', {}, n.type),
    el('td', {}, n.priority), el('td', {}, n.campaignId ? el('code', {}, n.campaignId) : ''), ds);
}

let loading = false;
async function load() {
  if (!user || loading) return;
  loading = true;
  const status = $('#history-status');
  try {
    const items = [];
    let next = '';
    for (let i = 0; i < pages; i++) {
      const page = await history(next);
      items.push(...page.items);
      next = page.nextCursor || '';
      if (!next) break;
    }
    cursor = next;
    $('#history tbody').replaceChildren(...items.map(row));
    $('#older').hidden = !cursor;
    status.textContent = items.length ? '' : 'No notifications from ' + caller + ' to this user' + (filters.length ? ' with these filters.' : '.');
    status.dataset.state = 'loaded';
  } catch (err) {
    status.textContent = 'Could not read the history: ' + err.message;
    status.dataset.state = 'error';
  } finally {
    document.body.dataset.refreshed = String(Date.now());
    loading = false;
  }
}

// The callers the recent notifications name for this user, to pick from;
// without ?caller=, the newest one's (else cli, herald send's).
async function callers() {
  const recent = await getJSON('/_dev/notifications?limit=100').catch(() => []);
  const seen = [...new Set(recent.filter((n) => n.userId === user && n.caller).map((n) => devCallerOf(n.caller)))];
  $('#callers').replaceChildren(...seen.map((c) => el('option', { value: c })));
  return seen[0] || 'cli';
}

async function start() {
  const form = $('#history-form');
  for (const name of ['id', 'type', 'channel', 'status']) form.elements[name].value = params.get(name) || '';
  if (!user) return;
  if (!caller) caller = await callers();
  else callers();
  form.elements.caller.value = caller;
  $('#history-user').textContent = user;
  $('#history-caller').textContent = caller;
  $('#history-of').hidden = false;
  await load();
}

let timer = 0;
function schedule() {
  clearInterval(timer);
  if ($('#auto').checked) timer = setInterval(load, 2000);
}
$('#auto').addEventListener('change', schedule);
$('#refresh').addEventListener('click', load);
$('#older').addEventListener('click', () => { pages++; load(); });
start().then(schedule);
