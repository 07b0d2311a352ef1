// The dev console: one page over the runner's /_dev routes. Everything is
// rendered with DOM APIs (textContent), never innerHTML: captured mail and
// payloads are data, not markup. Email HTML is shown in a sandboxed iframe.

import { $, el, pill, stamp, time, getJSON, devCallerOf } from '/_dev/console/dom.js';

// ---- notifications
function renderNotifications(list) {
  const body = $('#notifications tbody');
  body.replaceChildren(...list.map((n) => {
    const ds = el('td', { class: 'deliveries' });
    for (const ch of Object.keys(n.deliveries || {}).sort()) {
      const d = n.deliveries[ch];
      const label = ch + ': ' + d.status + (d.reason ? ' (' + d.reason + ')' : '') + (d.attempts ? ' ×' + d.attempts : '');
      const p = pill(label, d.status);
      p.dataset.channel = ch;
      p.dataset.status = d.status;
      if (d.lastError) p.title = d.lastError;
      ds.append(p);
    }
    if (!Object.keys(n.deliveries || {}).length) ds.append(pill('planning…', 'planned'));
    return el('tr', { 'data-id': n.id },
      el('td', {}, time(n.createdAt)), el('td', {}, el('code', {}, n.id)), el('td', {}, n.type),
      el('td', {}, userLink(n.userId, n.caller)), el('td', {}, n.priority), el('td', { class: 'overall' }, overallPill(n.overall || n.status)), ds);
  }));
}

// userLink opens the user's history from the notification's caller
// (user.html); a notification to an address alone has no user.
function userLink(userId, stored) {
  if (!userId) return '';
  const caller = devCallerOf(stored);
  const q = new URLSearchParams({ id: userId });
  if (caller) q.set('caller', caller);
  return el('a', { href: '/_dev/user?' + q, 'data-user': userId, title: 'history of ' + userId + (caller ? ' from ' + caller : '') }, userId);
}

// overall is the runner's summary of the deliveries (console.go, overallState).
const overallClass = { sent: 'sent', 'partly failed': 'failed', failed: 'failed', cancelled: 'dropped', dropped: 'dropped',
  skipped: 'skipped', deferred: 'deferred', 'in progress': 'queued', planning: 'planned' };
function overallPill(state) {
  const p = pill(state, overallClass[state] || '');
  p.dataset.overall = state;
  return p;
}

// ---- emails
let emails = [];
let selectedEmail = '';

function renderEmails(store) {
  emails = (store.emails || []).slice().reverse(); // newest first
  $('#emails-count').textContent = '(' + emails.length + ')';
  $('#emails').replaceChildren(...emails.map((m) => {
    const b = el('button', { type: 'button', 'data-message-id': m.messageId, 'aria-current': String(m.messageId === selectedEmail) },
      m.subject || '(no subject)', el('small', {}, (m.destination?.to || []).join(', ') + ' · ' + stamp(new Date((m.at || 0) * 1000))));
    b.addEventListener('click', () => { selectedEmail = m.messageId; renderEmails(store); showEmail(m); });
    return el('li', {}, b);
  }));
}

function showEmail(m) {
  const view = $('#email-view');
  const headers = el('table', { class: 'headers' }, el('tbody', {},
    el('tr', {}, el('th', {}, 'From'), el('td', {}, m.from || '')),
    el('tr', {}, el('th', {}, 'To'), el('td', {}, (m.destination?.to || []).join(', '))),
    el('tr', {}, el('th', {}, 'Subject'), el('td', {}, m.subject || '')),
    ...(m.headers || []).map((h) => el('tr', {}, el('th', {}, h.name), el('td', {}, el('code', {}, h.value))))));
  // sandbox="": no scripts, no same-origin access, no forms, no top navigation.
  const frame = el('iframe', { sandbox: '', title: 'HTML part of ' + (m.subject || 'the email'), referrerpolicy: 'no-referrer' });
  frame.srcdoc = m.body?.html || '<p><em>No HTML part.</em></p>';
  view.replaceChildren(
    el('h3', { class: 'subject' }, m.subject || '(no subject)'),
    el('details', { open: '' }, el('summary', {}, 'Headers'), headers),
    el('h4', {}, 'HTML'), frame,
    el('h4', {}, 'Text'), el('pre', { class: 'text-part' }, m.body?.text || '(no text part)'));
}

// ---- SMS, pushes, queues
function renderSMS(list) {
  $('#sms-count').textContent = '(' + list.length + ')';
  $('#sms tbody').replaceChildren(...list.slice().reverse().map((m) =>
    el('tr', {}, el('td', {}, time(m.at)), el('td', {}, m.provider), el('td', {}, m.to), el('td', {}, el('pre', {}, m.text)))));
}

// Events: the newest 50, one line each (time, detail-type, the detail's key
// fields), the whole detail and the rules it matched on click, in a box of
// bounded height so that the queues, DLQs and faults stay in view. An event
// opened stays open across refreshes.
const openEvents = new Set();
const shownEvents = 50;

function eventLine(e) {
  const d = e.detail || {};
  const keys = [d.channel, d.status && d.status + (d.reason ? ': ' + d.reason : ''), d.notificationId || d.campaignId,
    d.counts && d.counts.sent + '/' + d.counts.recipients + ' sent', d.type].filter(Boolean);
  return el('summary', {}, el('time', {}, time(e.at)), ' ', el('strong', {}, e['detail-type']), ' ', el('span', { class: 'keys' }, keys.join(' · ')),
    e.failedInvocations?.length ? pill('target failed', 'bad') : '');
}

function renderEvents(body) {
  const list = body.events || [];
  $('#events-count').textContent = '(' + list.length + (list.length > shownEvents ? ', newest ' + shownEvents + ' shown' : '') + ')';
  $('#events').replaceChildren(...list.slice(-shownEvents).reverse().map((e) => {
    const item = el('details', { 'data-event-id': e.id });
    item.open = openEvents.has(e.id);
    item.addEventListener('toggle', () => (item.open ? openEvents.add(e.id) : openEvents.delete(e.id)));
    item.append(eventLine(e), el('pre', {}, JSON.stringify(e.detail, null, 1)),
      el('p', { class: 'hint' }, 'matched rules: ' + ((e.matchedRules || []).join(', ') || '—') +
        (e.failedInvocations?.length ? '; failed targets: ' + e.failedInvocations.join(', ') : '')));
    return el('li', {}, item);
  }));
}

function renderPushes(list) {
  $('#push-count').textContent = '(' + list.length + ')';
  $('#pushes tbody').replaceChildren(...list.map((m) =>
    el('tr', { 'data-subscription': m.subscriptionId }, el('td', {}, time(m.receivedAt)), el('td', {}, el('code', {}, m.subscriptionId)),
      el('td', {}, el('pre', {}, typeof m.payload === 'string' ? m.payload : JSON.stringify(m.payload, null, 1))),
      el('td', {}, m.urgency || ''), el('td', {}, String(m.ttl)))));
}

function renderMobile(data) {
  const list = data.messages || [];
  $('#mobile-count').textContent = '(' + list.length + ')';
  $('#mobile tbody').replaceChildren(...list.map((m) =>
    el('tr', { 'data-device': m.deviceId }, el('td', {}, time(m.at)), el('td', {}, m.platform), el('td', {}, el('code', {}, m.deviceId || '')),
      el('td', {}, m.userId || ''), el('td', {}, el('pre', {}, JSON.stringify(m.payload, null, 1))),
      el('td', {}, el('pre', {}, JSON.stringify(m.attributes || {}, null, 1))))));
}

// Work queues and dead-letter queues in two tables: a DLQ is not a backlog.
function renderQueues(list) {
  const row = (q) => el('tr', { class: q.dlq ? 'dlq' + (q.visible + q.inFlight === 0 ? ' empty' : '') : '' },
    el('td', {}, q.logicalId), el('td', {}, String(q.visible)), el('td', {}, String(q.inFlight)), el('td', {}, String(q.delayed)));
  $('#queues tbody').replaceChildren(...list.filter((q) => !q.dlq).map(row));
  $('#dlqs tbody').replaceChildren(...list.filter((q) => q.dlq).map(row));
}

// ---- faults
function renderFaults(state) {
  const rows = ['email', 'sms', 'push', 'mobile', 'events'].map((ch) => {
    const s = state[ch] || { mode: 'off' };
    const now = s.mode === 'off' ? pill('off', 'ok') : pill(s.mode + (s.remaining < 0 ? ' until off' : ' ×' + s.remaining), 'bad');
    const form = el('form', { class: 'fault', 'data-channel': ch });
    const mode = el('select', { name: 'mode', 'aria-label': ch + ' fault mode' },
      el('option', { value: 'transient' }, 'transient'), el('option', { value: 'permanent' }, 'permanent'), el('option', { value: 'refused' }, 'refused'), el('option', { value: 'off' }, 'off'));
    const times = el('input', { name: 'times', type: 'number', min: '0', value: '2', size: '3', 'aria-label': ch + ' fault count (0: until off)' });
    form.append(mode, times, el('button', {}, 'Set'));
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      await fetch('/_dev/faults', { method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ channel: ch, mode: mode.value, times: parseInt(times.value, 10) || 0 }) });
      // refresh() leaves the switches alone while focus is in them (so
      // edits survive); show the state just set at once.
      try { renderFaults(await getJSON('/_dev/faults')); } catch (err) { console.warn(err); }
      refresh();
    });
    return el('tr', {}, el('td', {}, ch), el('td', {}, now, s.served ? ' served ' + s.served : ''), el('td', {}, form));
  });
  $('#faults tbody').replaceChildren(...rows);
}

// ---- refresh loop
let inFlight = false;
async function refresh() {
  if (inFlight) return;
  inFlight = true;
  const parts = [
    ['/_dev/notifications?limit=25', renderNotifications],
    ['/_dev/emails', renderEmails],
    ['/_dev/sms', renderSMS],
    ['/_dev/events', renderEvents],
    ['/_dev/push', renderPushes],
    ['/_dev/mobile-push', renderMobile],
    ['/_dev/queues', renderQueues],
  ];
  // The fault form keeps its edits while the user is typing in it.
  if (!document.activeElement?.closest('#faults')) parts.push(['/_dev/faults', renderFaults]);
  await Promise.all(parts.map(async ([path, render]) => {
    try { render(await getJSON(path)); } catch (err) { console.warn(err); }
  }));
  try {
    const h = await fetch('/_dev/health', { cache: 'no-store' }).then((r) => r.json());
    $('#health').textContent = h.ok ? 'all parts up' : 'degraded: ' + JSON.stringify(h.services);
    $('#health').className = 'pill ' + (h.ok ? 'ok' : 'bad');
  } catch (_) {
    $('#health').textContent = 'runner unreachable';
    $('#health').className = 'pill bad';
  }
  document.body.dataset.refreshed = String(Date.now());
  inFlight = false;
}

let timer = 0;
function schedule() {
  clearInterval(timer);
  if ($('#auto').checked) timer = setInterval(refresh, 2000);
}

// ---- demo inbox and push subscription
function bytesToBase64Url(bytes) {
  let s = '';
  for (const b of new Uint8Array(bytes)) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

// localPushManager stands in for registration.pushManager: the subscription
// comes from the runner's local push service, which keeps its private keys
// and decrypts what Herald sends to it (listed under "Web Push").
function localPushManager(user) {
  const key = 'herald-dev-push:' + user;
  const wrap = (s) => ({
    endpoint: s.endpoint,
    id: s.id,
    options: { applicationServerKey: null },
    toJSON: () => ({ endpoint: s.endpoint, expirationTime: null, keys: s.keys }),
    unsubscribe: async () => {
      await fetch('/_dev/push-subscriptions/' + encodeURIComponent(s.id), { method: 'DELETE' });
      localStorage.removeItem(key);
      return true;
    },
  });
  return {
    async getSubscription() {
      const s = JSON.parse(localStorage.getItem(key) || 'null');
      return s ? wrap(s) : null;
    },
    async subscribe({ applicationServerKey }) {
      const r = await fetch('/_dev/push-subscriptions', { method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ applicationServerKey: bytesToBase64Url(applicationServerKey) }) });
      if (!r.ok) throw new Error('local push service: ' + r.status);
      const s = await r.json();
      localStorage.setItem(key, JSON.stringify(s));
      return wrap(s);
    },
  };
}

async function setupInbox(user) {
  for (const id of ['#inbox-of', '#inbox-hint', '#inbox-row', '#prefs-box']) $(id).hidden = false;
  $('#inbox-user').textContent = user;
  document.querySelector('#user-form input').value = user;
  const [{ HeraldPush }] = await Promise.all([import('/_dev/kit/herald-push.js'), import('/_dev/kit/herald-inbox.js'), import('/_dev/kit/herald-preferences.js')]);
  let cached = { token: '', until: 0 };
  const getToken = async () => {
    if (Date.now() < cached.until) return cached.token;
    const t = await getJSON('/_dev/token?sub=' + encodeURIComponent(user));
    cached = { token: t.token, until: Date.now() + (t.expiresIn - 60) * 1000 };
    return t.token;
  };
  const inbox = $('#inbox');
  inbox.setAttribute('api-base', location.origin);
  inbox.setAttribute('user-id', user);
  // The live inbox (WebSocket): updates without polling while it is open.
  const urls = await getJSON('/_dev/urls').catch(() => ({}));
  if (urls.websocket) inbox.setAttribute('live-url', urls.websocket);
  inbox.tokenProvider = getToken;
  const prefs = $('#preferences');
  prefs.setAttribute('api-base', location.origin);
  prefs.tokenProvider = getToken;

  const status = $('#push-status');
  // The app's backend would register the subscription with Herald's service
  // route; the console plays that backend, calling as "console".
  const push = new HeraldPush({
    apiBase: location.origin, getToken, serviceWorkerUrl: '/_dev/kit/herald-sw.js',
    pushManager: () => localPushManager(user),
    onSubscription: async (sub) => {
      const r = await fetch('/v1/users/' + encodeURIComponent(user) + '/push-subscriptions', {
        method: 'POST', headers: { 'Content-Type': 'application/json', 'X-Herald-Dev-Caller': 'console' }, body: JSON.stringify(sub) });
      const body = await r.json();
      if (!r.ok) throw new Error(body.detail || body.code || r.status);
      status.dataset.subscriptionId = body.id;
    },
    onUnsubscribe: async () => {
      const id = status.dataset.subscriptionId;
      if (id) await fetch('/v1/users/' + encodeURIComponent(user) + '/push-subscriptions/' + id, { method: 'DELETE', headers: { 'X-Herald-Dev-Caller': 'console' } });
      delete status.dataset.subscriptionId;
    },
  });
  $('#subscribe').addEventListener('click', async () => {
    status.textContent = 'Subscribing…';
    try {
      const sub = await push.subscribe();
      status.textContent = 'Subscribed: ' + sub.endpoint.split('/').pop();
      status.dataset.state = 'subscribed';
      status.dataset.localId = sub.endpoint.split('/').pop();
    } catch (err) {
      status.textContent = 'Could not subscribe: ' + err.message;
      status.dataset.state = 'error';
    }
  });
  $('#unsubscribe').addEventListener('click', async () => {
    try {
      status.textContent = (await push.unsubscribe()) ? 'Unsubscribed.' : 'Not subscribed.';
      status.dataset.state = 'unsubscribed';
    } catch (err) {
      status.textContent = 'Could not unsubscribe: ' + err.message;
    }
  });
}

$('#auto').addEventListener('change', schedule);
$('#refresh').addEventListener('click', refresh);
$('#user-form').addEventListener('submit', (e) => {
  e.preventDefault();
  const u = new FormData(e.target).get('user');
  location.search = '?user=' + encodeURIComponent(u);
});
const user = new URLSearchParams(location.search).get('user');
if (user) setupInbox(user).catch((err) => { $('#push-status').textContent = err.message; });
refresh();
schedule();
