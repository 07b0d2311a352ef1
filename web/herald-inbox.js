// herald-inbox.js — <herald-inbox>, the end user's in-app inbox as a custom
// element: a list with cursor paging, the unread badge (99+), mark read,
// mark all read, archive, announcements. Keyboard and screen-reader
// accessible; plain ES module, no framework, no dependencies.
//
// It calls Herald's user routes with the end user's JWT, which the app
// provides; it never needs a service credential.
//
//   <script type="module" src="/herald-inbox.js"></script>
//   <herald-inbox api-base="https://abc.execute-api.eu-west-1.amazonaws.com" user-id="u1"></herald-inbox>
//   <script type="module">
//     document.querySelector('herald-inbox').tokenProvider = async () => myAuth.accessToken();
//   </script>
//
// Attributes: api-base, user-id, page-size (default 20), poll-seconds (unread
// count refresh, default 30; 0 turns it off), presence-seconds (how often a
// visible page reports presence, default 60; 0 turns it off), live-url,
// catch-up-seconds (Catch-up, below; leave the default).
// Presence: while the page is visible (Page Visibility API) the element tells
// Herald the user is in the app (POST …/presence), so catalog channels with
// unlessActiveWithin (e.g. push) are skipped; when the page is hidden it stops
// both presence and the unread-count polling (an inbox read counts as
// presence too), and resumes when the page is visible again.
// Live: with live-url (the stack's WebSocketUrl, wss://…/live) the element
// opens the live inbox's WebSocket (?token=<JWT>) while the page is visible
// and updates the list and badge when Herald posts a change, without
// polling; instead of reporting presence it pings every LIVE_PING_SECONDS
// (an open connection is presence; presence-seconds 0 turns the pings off,
// and API Gateway then closes the socket after 10 idle minutes), reconnects with exponential backoff and
// full jitter (1 s doubling to 30 s; a connection lasts at most 2 hours),
// falls back to polling while the socket cannot be opened, and closes it
// when the page is hidden. Answers arriving out of order never undo newer
// state: only the newest list load is shown, and a count answer whose request
// started before a live message (which carries the badge) is dropped.
// Catch-up: when the list reloaded for an announcement's inbox.created lacks
// it (the API instance that answered had not seen it yet), the element
// reloads the list once more catch-up-seconds later (default 12; see
// CATCH_UP_SECONDS), at most once per announcement, never while the page is
// hidden.
// Events: herald-inbox-count {count, display}, herald-inbox-error {status, code, message},
// herald-inbox-live {state: "open" | "closed" | "polling"}.
// It refreshes at once when herald-sw.js reports a push it showed.
// Keyboard, in the list: ↑/↓/Home/End move between items, Enter opens an
// item's link (and marks it read), R marks read, A archives.

const FILTERS = [['all', 'All'], ['unread', 'Unread'], ['archived', 'Archived']];

// CATCH_UP_SECONDS: how long after a list reload that lacks the announcement
// an inbox.created named the element reloads once more (catch-up-seconds
// overrides it; leave the default). Each API instance reuses its read of the
// announcements for AnnouncementCacheTTL (10 s, internal/api/announcements.go),
// so the reload a broadcast's message starts can reach an instance whose copy
// predates the announcement while the badge (read by the poster) counts it; a
// copy read up to 2 s after the announcement was stored may still lack it
// (it is read from the inbox index, eventually consistent). After 10 + 2 s
// every instance's copy is newer. A test in internal/api (kit_test.go) holds
// this value to the Go constant.
export const CATCH_UP_SECONDS = 12;

// LIVE_PING_SECONDS: how often an open live socket pings. API Gateway closes
// a WebSocket after 10 minutes without a client message; each ping keeps it
// open and holds the user present for those 10 minutes (internal/live,
// PingInterval: a test there holds this value to it). Rarer pings are what
// lets a large online population fit the WebSocket throttle and the table's
// write budget (herald capacity, liveConnections).
export const LIVE_PING_SECONDS = 540;

// Announcement ids: "a" and 26 base32 characters. Only announcements get a
// catch-up: a notification's item is not behind any instance's cache.
const ANNOUNCEMENT_ID = /^a[a-z0-9]{26}$/;

/** The badge text for a count: "99+" from 100 on. */
export function badgeText(count, display) {
  if (display) return display;
  return count > 99 ? '99+' : String(count);
}

const STYLE = `
:host { display: block; font: 14px/1.4 system-ui, sans-serif; color: #1b1f24; max-width: 34rem; }
.inbox { border: 1px solid #d0d7de; border-radius: 8px; background: #fff; }
header { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; padding: .6rem .8rem; border-bottom: 1px solid #d0d7de; }
h2 { font-size: 1rem; margin: 0; flex: 1; display: flex; align-items: center; gap: .4rem; }
.badge { background: #cf222e; color: #fff; border-radius: 999px; padding: 0 .45rem; font-size: .75rem; min-width: 1.2rem; text-align: center; }
.badge[hidden] { display: none; }
[role=tablist] { display: flex; gap: .25rem; }
button { font: inherit; border: 1px solid #d0d7de; background: #f6f8fa; border-radius: 6px; padding: .15rem .55rem; cursor: pointer; color: inherit; }
button:hover { background: #eaeef2; }
button:focus-visible, li:focus-visible, a:focus-visible { outline: 2px solid #0969da; outline-offset: 2px; }
[role=tab][aria-selected=true] { background: #0969da; color: #fff; border-color: #0969da; }
ul { list-style: none; margin: 0; padding: 0; }
li { padding: .6rem .8rem; border-bottom: 1px solid #eaeef2; display: grid; grid-template-columns: 1fr auto; gap: .2rem .6rem; }
li.unread { background: #f0f6ff; }
li.unread .title::before { content: ""; display: inline-block; width: .5rem; height: .5rem; border-radius: 50%; background: #0969da; margin-right: .4rem; vertical-align: middle; }
.title { font-weight: 600; }
.sr-only { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
.kind { font-size: .7rem; text-transform: uppercase; letter-spacing: .04em; color: #8250df; margin-left: .3rem; }
.body { grid-column: 1; color: #424a53; white-space: pre-line; }
.meta { grid-column: 1; font-size: .75rem; color: #656d76; }
.actions { grid-row: 1 / span 3; grid-column: 2; display: flex; flex-direction: column; gap: .25rem; align-items: stretch; }
.empty, .status { padding: .6rem .8rem; color: #656d76; margin: 0; }
.more { margin: .6rem .8rem; }
`;

class HeraldInbox extends HTMLElement {
  static get observedAttributes() { return ['api-base', 'user-id', 'page-size', 'poll-seconds', 'presence-seconds', 'live-url']; }

  constructor() {
    super();
    this._tokenProvider = null;
    this.filter = 'all';
    this.items = [];
    this.cursor = '';
    this.count = 0;
    this.display = '0';
    this._timer = 0;
    this._presenceTimer = 0;
    this._socket = null;
    this._liveOpen = false;
    this._liveFailures = 0;
    this._reconnectTimer = 0;
    // Answers can arrive out of order (a live message and the loads it or a
    // reconnect started): only the newest load's answer is shown.
    this._listSeq = 0;
    this._countSeq = 0;
    // Catch-up: announcement ids named by inbox.created not yet checked
    // against a list load started after the message, the pending catch-up
    // timers by id, and the ids that had theirs (one each; the newest 100).
    this._awaited = new Set();
    this._catchUps = new Map();
    this._caughtUp = new Set();
    this._build();
  }

  /** An async function returning the end user's JWT. Setting it loads the inbox. */
  set tokenProvider(fn) {
    this._tokenProvider = fn;
    if (this.isConnected) {
      this.refresh();
      this._schedule();
    }
  }
  get tokenProvider() { return this._tokenProvider; }

  connectedCallback() {
    if (this._tokenProvider) this.refresh();
    this._schedule();
    // herald-sw.js tells open pages about each push it showed: refresh now.
    this._onPush = (e) => { if (e.data && e.data.type === 'herald:push' && this._tokenProvider) this.refresh(); };
    if ('serviceWorker' in navigator) navigator.serviceWorker.addEventListener('message', this._onPush);
    // Hidden: no presence, no polling. Visible again: presence and the
    // count at once, then the timers.
    this._onVisibility = () => {
      this._schedule();
      if (!document.hidden && this._tokenProvider) this.refreshCount();
    };
    document.addEventListener('visibilitychange', this._onVisibility);
  }

  disconnectedCallback() {
    clearInterval(this._timer);
    clearInterval(this._presenceTimer);
    this._closeLive();
    for (const timer of this._catchUps.values()) clearTimeout(timer);
    this._catchUps.clear();
    document.removeEventListener('visibilitychange', this._onVisibility);
    if ('serviceWorker' in navigator) navigator.serviceWorker.removeEventListener('message', this._onPush);
  }

  attributeChangedCallback(name, old, value) {
    if (old === value || !this.isConnected) return;
    if (name === 'poll-seconds' || name === 'presence-seconds') this._schedule();
    else if (name === 'live-url') { this._closeLive(); this._schedule(); }
    else if (this._tokenProvider) this.refresh();
  }

  get apiBase() { return (this.getAttribute('api-base') || location.origin).replace(/\/+$/, ''); }
  get userId() { return this.getAttribute('user-id') || ''; }
  get pageSize() { return Math.min(100, Math.max(1, parseInt(this.getAttribute('page-size') || '20', 10) || 20)); }

  get liveUrl() { return this.getAttribute('live-url') || ''; }

  get catchUpSeconds() {
    const s = parseFloat(this.getAttribute('catch-up-seconds') ?? '');
    return s > 0 ? s : CATCH_UP_SECONDS;
  }

  _schedule() {
    clearInterval(this._timer);
    clearInterval(this._presenceTimer);
    this._timer = this._presenceTimer = 0;
    if (document.hidden) { // a hidden page is not the user in the app
      this._closeLive();
      return;
    }
    if (this.liveUrl && this._tokenProvider && !this._socket && !this._reconnectTimer && !this._liveConnecting) this._openLive();
    const p = parseInt(this.getAttribute('presence-seconds') ?? '60', 10);
    if (this._liveOpen) {
      // The socket is the presence and the updates: ping, no polling.
      if (p > 0) this._presenceTimer = setInterval(() => this._ping(), LIVE_PING_SECONDS * 1000);
      return;
    }
    // No live socket (none configured, or it cannot be opened): poll.
    const s = parseInt(this.getAttribute('poll-seconds') ?? '30', 10);
    if (s > 0 && (!this.liveUrl || this._liveFailures > 0)) {
      this._timer = setInterval(() => this._tokenProvider && this.refreshCount(), s * 1000);
    }
    if (p > 0 && this._tokenProvider) {
      this.sendPresence();
      this._presenceTimer = setInterval(() => this.sendPresence(), p * 1000);
    }
  }

  async _openLive() {
    this._liveConnecting = true;
    let token;
    try {
      token = await this._tokenProvider();
    } catch (err) {
      this._liveConnecting = false;
      this._fail(err);
      return this._liveRetry();
    }
    this._liveConnecting = false;
    if (document.hidden || !this.isConnected || this._socket) return;
    const url = new URL(this.liveUrl);
    url.searchParams.set('token', token);
    let ws;
    try {
      ws = new WebSocket(url);
    } catch (err) {
      return this._liveRetry();
    }
    this._socket = ws;
    ws.onopen = () => {
      this._liveOpen = true;
      this._liveFailures = 0;
      this._schedule();
      this.refresh(); // catch up on what happened while closed
      this.dispatchEvent(new CustomEvent('herald-inbox-live', { detail: { state: 'open' } }));
    };
    ws.onmessage = (e) => {
      let m;
      try { m = JSON.parse(e.data); } catch { return; }
      if (!m || (m.kind !== 'inbox.created' && m.kind !== 'inbox.updated')) return;
      if (m.unread) {
        this._countSeq++; // newer than any count request still under way
        this._setCount(m.unread.count, m.unread.display);
      }
      if (m.kind === 'inbox.created' && ANNOUNCEMENT_ID.test(m.id)) this._awaited.add(m.id);
      this._refreshList();
    };
    ws.onclose = () => {
      const wasOpen = this._liveOpen;
      this._socket = null;
      this._liveOpen = false;
      if (!wasOpen) this._liveFailures++;
      this.dispatchEvent(new CustomEvent('herald-inbox-live', { detail: { state: this._liveFailures > 0 ? 'polling' : 'closed' } }));
      if (this.isConnected && !document.hidden) {
        this._schedule();
        this._liveRetry(wasOpen);
      }
    };
  }

  /** Reconnects after a backoff with full jitter: 1 s doubling to 30 s. */
  _liveRetry(wasOpen) {
    clearTimeout(this._reconnectTimer);
    const cap = Math.min(30000, 1000 * 2 ** Math.min(this._liveFailures, 5));
    const delay = wasOpen ? Math.random() * 1000 : Math.random() * cap;
    this._reconnectTimer = setTimeout(() => {
      this._reconnectTimer = 0;
      if (this.isConnected && !document.hidden && !this._socket) this._openLive();
    }, delay);
  }

  _ping() {
    if (this._socket && this._liveOpen) this._socket.send('{"action":"ping"}');
  }

  _closeLive() {
    clearTimeout(this._reconnectTimer);
    this._reconnectTimer = 0;
    if (this._socket) {
      const ws = this._socket;
      this._socket = null;
      this._liveOpen = false;
      ws.onclose = null;
      ws.close(1000);
    }
  }

  /** Reloads the first page only (the badge came with the live message). */
  async _refreshList() {
    const seq = ++this._listSeq;
    try {
      const page = await this._call('GET', '/inbox', { limit: String(this.pageSize), filter: this.filter });
      if (seq !== this._listSeq) return; // a newer load answers for the list
      this.items = page.items || [];
      this.cursor = page.nextCursor || '';
      this._render();
      this._checkAwaited();
    } catch (err) {
      this._fail(err);
    }
  }

  /**
   * After a first-page load that started after the live messages awaited
   * (only the newest load is shown): an announcement it lacks gets one
   * catch-up reload later, unless the filter (Archived) would not show it.
   */
  _checkAwaited() {
    for (const id of this._awaited) {
      this._awaited.delete(id);
      if (this.filter === 'archived' || this._caughtUp.has(id) || this.items.some((i) => i.id === id)) continue;
      this._caughtUp.add(id);
      if (this._caughtUp.size > 100) this._caughtUp.delete(this._caughtUp.values().next().value);
      this._catchUps.set(id, setTimeout(() => {
        this._catchUps.delete(id);
        // Hidden: no request; the reconnect on visibility reloads the list.
        if (document.hidden || !this.isConnected || this.filter === 'archived' || this.items.some((i) => i.id === id)) return;
        this._refreshList();
      }, this.catchUpSeconds * 1000));
    }
  }

  /** Tells Herald the user is in the app now (only while the page is visible). */
  async sendPresence() {
    if (document.hidden || !this._tokenProvider) return;
    try {
      await this._call('POST', '/presence');
    } catch (err) {
      this._fail(err);
    }
  }

  _build() {
    const root = this.attachShadow({ mode: 'open' });
    const style = document.createElement('style');
    style.textContent = STYLE;
    root.append(style);
    const section = el('section', { class: 'inbox', part: 'inbox' });
    const header = el('header');
    const h2 = el('h2', { id: 'heading' }, 'Notifications');
    this.badge = el('span', { class: 'badge', part: 'badge', hidden: '' });
    h2.append(this.badge);
    const tabs = el('div', { role: 'tablist', 'aria-label': 'Show' });
    this.tabs = FILTERS.map(([value, label]) => {
      const b = el('button', { role: 'tab', type: 'button', 'data-filter': value, 'aria-selected': String(value === this.filter), tabindex: value === this.filter ? '0' : '-1' }, label);
      b.addEventListener('click', () => this.setFilter(value));
      b.addEventListener('keydown', (e) => this._tabKeys(e));
      tabs.append(b);
      return b;
    });
    this.readAllButton = el('button', { type: 'button', class: 'read-all', part: 'read-all' }, 'Mark all read');
    this.readAllButton.addEventListener('click', () => this.markAllRead());
    header.append(h2, tabs, this.readAllButton);
    this.list = el('ul', { role: 'list', 'aria-labelledby': 'heading', part: 'list' });
    this.list.addEventListener('keydown', (e) => this._listKeys(e));
    this.empty = el('p', { class: 'empty', hidden: '' }, 'Nothing here.');
    this.moreButton = el('button', { type: 'button', class: 'more', hidden: '' }, 'Load more');
    this.moreButton.addEventListener('click', () => this.loadMore());
    this.status = el('p', { class: 'status', role: 'status', 'aria-live': 'polite' });
    section.append(header, this.list, this.empty, this.moreButton, this.status);
    root.append(section);
  }

  async _call(method, path, query) {
    if (!this._tokenProvider) throw new Error('herald-inbox: set tokenProvider first');
    const token = await this._tokenProvider();
    const url = new URL(this.apiBase + '/v1/users/' + encodeURIComponent(this.userId) + path);
    for (const [k, v] of Object.entries(query || {})) if (v) url.searchParams.set(k, v);
    const resp = await fetch(url, { method, headers: { Authorization: 'Bearer ' + token } });
    const body = await resp.json().catch(() => null);
    if (!resp.ok) {
      const err = new Error((body && (body.detail || body.title || body.message)) || 'Herald answered ' + resp.status);
      err.status = resp.status;
      err.code = (body && body.code) || '';
      throw err;
    }
    return body;
  }

  _fail(err) {
    this.status.textContent = 'Could not reach your notifications (' + (err.code || err.status || err.message) + ').';
    this.dispatchEvent(new CustomEvent('herald-inbox-error', { detail: { status: err.status || 0, code: err.code || '', message: err.message } }));
  }

  /** Reloads the first page and the unread count. */
  async refresh() {
    this.list.setAttribute('aria-busy', 'true');
    const seq = ++this._listSeq;
    try {
      const [page] = await Promise.all([
        this._call('GET', '/inbox', { limit: String(this.pageSize), filter: this.filter }),
        this.refreshCount(),
      ]);
      if (seq !== this._listSeq) return; // a newer load answers for the list
      this.items = page.items || [];
      this.cursor = page.nextCursor || '';
      this.status.textContent = '';
      this._render();
      this._checkAwaited();
    } catch (err) {
      this._fail(err);
    } finally {
      this.list.removeAttribute('aria-busy');
    }
  }

  /** Fetches the next page (cursor paging) and appends it. */
  async loadMore() {
    if (!this.cursor) return;
    const seq = this._listSeq;
    try {
      const page = await this._call('GET', '/inbox', { limit: String(this.pageSize), filter: this.filter, cursor: this.cursor });
      if (seq !== this._listSeq) return; // the first page was reloaded meanwhile: this page may not follow it
      const first = this.items.length;
      this.items = this.items.concat(page.items || []);
      this.cursor = page.nextCursor || '';
      this._render();
      const next = this.list.children[first];
      if (next) this._focusItem(next);
    } catch (err) {
      this._fail(err);
    }
  }

  /** Re-reads the unread count and updates the badge. */
  async refreshCount() {
    const seq = ++this._countSeq;
    try {
      const c = await this._call('GET', '/inbox/unread-count');
      // A live message or a later request since has the newer count.
      if (seq !== this._countSeq) return;
      this._setCount(c.count, c.display);
    } catch (err) {
      this._fail(err);
    }
  }

  _setCount(count, display) {
    this.count = count;
    this.display = badgeText(count, display);
    this.badge.textContent = this.display;
    this.badge.hidden = count === 0;
    this.badge.setAttribute('aria-label', count === 0 ? 'no unread notifications' : this.display + ' unread');
    this.readAllButton.disabled = count === 0;
    this.dispatchEvent(new CustomEvent('herald-inbox-count', { detail: { count, display: this.display } }));
  }

  setFilter(value) {
    this.filter = value;
    for (const t of this.tabs) {
      const on = t.dataset.filter === value;
      t.setAttribute('aria-selected', String(on));
      t.tabIndex = on ? 0 : -1;
    }
    return this.refresh();
  }

  async markRead(id) {
    const item = this.items.find((i) => i.id === id);
    if (!item || item.readAt) return;
    try {
      const state = await this._call('POST', '/inbox/' + encodeURIComponent(id) + '/read');
      item.readAt = state.readAt || new Date().toISOString();
      if (this.filter === 'unread') this.items = this.items.filter((i) => i.id !== id);
      this._render(id);
      this.status.textContent = 'Marked read.';
      await this.refreshCount();
    } catch (err) {
      this._fail(err);
    }
  }

  async archive(id) {
    try {
      await this._call('POST', '/inbox/' + encodeURIComponent(id) + '/archive');
      const at = this.items.findIndex((i) => i.id === id);
      if (this.filter !== 'archived') this.items = this.items.filter((i) => i.id !== id);
      this._render();
      const next = this.list.children[Math.min(at, this.list.children.length - 1)];
      if (next) this._focusItem(next);
      this.status.textContent = 'Archived.';
      await this.refreshCount();
    } catch (err) {
      this._fail(err);
    }
  }

  /** Marks every notification and announcement read (in as many calls as the server needs). */
  async markAllRead() {
    try {
      let total = 0;
      for (let i = 0; i < 20; i++) {
        const r = await this._call('POST', '/inbox/read-all');
        total += r.updated || 0;
        if (!r.more) break;
      }
      this.status.textContent = total === 1 ? '1 marked read.' : total + ' marked read.';
      await this.refresh();
    } catch (err) {
      this._fail(err);
    }
  }

  _render(focusId) {
    const focused = focusId || (this.shadowRoot.activeElement && this.shadowRoot.activeElement.closest && this.shadowRoot.activeElement.closest('li')?.dataset.id);
    this.list.replaceChildren(...this.items.map((item, i) => this._renderItem(item, i)));
    this.empty.hidden = this.items.length > 0;
    this.moreButton.hidden = !this.cursor;
    const li = focused && this.list.querySelector(`li[data-id="${CSS.escape(focused)}"]`);
    if (li) this._focusItem(li);
  }

  _renderItem(item, index) {
    const unread = !item.readAt;
    const li = el('li', {
      role: 'listitem', 'data-id': item.id, class: unread ? 'item unread' : 'item', part: 'item',
      tabindex: index === 0 ? '0' : '-1', 'aria-keyshortcuts': 'Enter R A',
    });
    const titleId = 'title-' + index;
    li.setAttribute('aria-labelledby', titleId);
    const title = el('div', { class: 'title', id: titleId });
    if (unread) title.append(el('span', { class: 'sr-only' }, 'Unread: '));
    title.append(item.title || '');
    if (item.kind === 'announcement') title.append(el('span', { class: 'kind' }, 'Announcement'));
    const href = safeHref(item.url);
    const body = el('div', { class: 'body' }, item.body || '');
    const meta = el('div', { class: 'meta' });
    meta.append(el('time', { datetime: item.createdAt || '' }, formatTime(item.createdAt)));
    if (href) {
      const a = el('a', { href, rel: 'noopener noreferrer', target: '_blank', tabindex: '-1' }, 'Open');
      a.addEventListener('click', () => this.markRead(item.id));
      meta.append(document.createTextNode(' · '), a);
    }
    const actions = el('div', { class: 'actions' });
    if (unread) {
      const read = el('button', { type: 'button', class: 'mark-read', tabindex: '-1', 'aria-label': 'Mark read: ' + (item.title || '') }, 'Mark read');
      read.addEventListener('click', () => this.markRead(item.id));
      actions.append(read);
    }
    if (!item.archivedAt) {
      const arch = el('button', { type: 'button', class: 'archive', tabindex: '-1', 'aria-label': 'Archive: ' + (item.title || '') }, 'Archive');
      arch.addEventListener('click', () => this.archive(item.id));
      actions.append(arch);
    }
    li.append(title, actions, body, meta);
    // Buttons join the tab order only while their item has focus (roving tabindex).
    li.addEventListener('focusin', () => this._focusItem(li, false));
    return li;
  }

  _focusItem(li, move = true) {
    for (const other of this.list.children) {
      const on = other === li;
      other.tabIndex = on ? 0 : -1;
      for (const b of other.querySelectorAll('button, a')) b.tabIndex = on ? 0 : -1;
    }
    if (move && this.shadowRoot.activeElement !== li) li.focus();
  }

  _listKeys(e) {
    const li = e.target.closest('li');
    if (!li) return;
    const items = [...this.list.children];
    const i = items.indexOf(li);
    let next = null;
    switch (e.key) {
      case 'ArrowDown': next = items[Math.min(i + 1, items.length - 1)]; break;
      case 'ArrowUp': next = items[Math.max(i - 1, 0)]; break;
      case 'Home': next = items[0]; break;
      case 'End': next = items[items.length - 1]; break;
      case 'Enter':
        if (e.target !== li) return;
        {
          const a = li.querySelector('a');
          if (a) a.click(); else this.markRead(li.dataset.id);
        }
        break;
      case 'r': case 'R': if (e.target === li) this.markRead(li.dataset.id); else return; break;
      case 'a': case 'A': if (e.target === li) this.archive(li.dataset.id); else return; break;
      default: return;
    }
    e.preventDefault();
    if (next) this._focusItem(next);
  }

  _tabKeys(e) {
    const i = this.tabs.indexOf(e.target);
    let j = -1;
    if (e.key === 'ArrowRight') j = (i + 1) % this.tabs.length;
    else if (e.key === 'ArrowLeft') j = (i - 1 + this.tabs.length) % this.tabs.length;
    else return;
    e.preventDefault();
    this.tabs[j].focus();
    this.setFilter(this.tabs[j].dataset.filter);
  }
}

function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

// Only http(s) links are rendered: an item's URL cannot run script.
function safeHref(u) {
  if (!u) return '';
  try {
    const p = new URL(u, location.href);
    return p.protocol === 'https:' || p.protocol === 'http:' ? p.href : '';
  } catch (_) {
    return '';
  }
}

function formatTime(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  return isNaN(d) ? '' : d.toLocaleString();
}

if (!customElements.get('herald-inbox')) customElements.define('herald-inbox', HeraldInbox);
export { HeraldInbox };
