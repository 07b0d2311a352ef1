// herald-preferences.js — <herald-preferences>, the end user's preference
// center as a custom element: a type × channel grid of switches, mandatory
// types locked with the reason, the user's quiet hours and digest window
// in their timezone, their notification budget (how many an hour and a
// day over every channel; the rest wait for one summary), and the topics they
// follow, each with a mute switch. Keyboard and screen-reader accessible;
// plain ES module, no framework, no dependencies.
//
// It calls Herald's user routes GET/PUT /v1/me/preferences, GET /v1/me/topics
// and PUT /v1/me/topics/{topic} with the end user's JWT, which the app
// provides: the user is the token's subject, so the element needs no user id
// and never a service credential.
//
//   <script type="module" src="/herald-preferences.js"></script>
//   <herald-preferences api-base="https://abc.execute-api.eu-west-1.amazonaws.com"></herald-preferences>
//   <script type="module">
//     document.querySelector('herald-preferences').tokenProvider = async () => myAuth.accessToken();
//   </script>
//
// Attributes: api-base; lang (en or ja) overrides the profile's locale for
// the element's own strings (type labels come from the catalog, in the
// profile's locale). Property topicLabel: a function from a topic key
// (thread:42) to the name shown for it (default: the key).
// Events: herald-preferences-change {type, channel, enabled},
// herald-preferences-budget {budget} (null: back to the default),
// herald-preferences-topic {topic, muted},
// herald-preferences-error {status, code, message}.
// Keyboard, in the grid: ←/→/↑/↓/Home/End move between switches, Space or
// Enter toggles one; a mandatory switch does not change and says why. In the
// topics list: ↑/↓/Home/End move between the mute switches.

const CHANNELS = ['email', 'sms', 'push'];

/** The element's own strings; type labels come from the API's answer. */
export const STRINGS = {
  en: {
    heading: 'Notification preferences',
    type: 'Notification',
    channels: { email: 'Email', sms: 'SMS', push: 'Push' },
    on: 'on', off: 'off',
    mandatory: 'Required: this notification cannot be turned off.',
    quietHours: 'Quiet hours',
    quietNone: 'None',
    quietWindow: (s, e, tz) => `${s}–${e} (${tz})`,
    quietNote: 'Only urgent notifications are sent during quiet hours.',
    digest: 'Digest window',
    digestDefault: 'Default',
    minutes: (n) => `${n} min`,
    loading: 'Loading…',
    saved: 'Saved.',
    failed: (c) => `Could not save your preferences (${c}).`,
    unreachable: (c) => `Could not load your preferences (${c}).`,
  },
  ja: {
    heading: '通知設定',
    type: '通知',
    channels: { email: 'メール', sms: 'SMS', push: 'プッシュ' },
    on: 'オン', off: 'オフ',
    mandatory: '必須：この通知はオフにできません。',
    quietHours: 'おやすみ時間',
    quietNone: 'なし',
    quietWindow: (s, e, tz) => `${s}〜${e}（${tz}）`,
    quietNote: 'おやすみ時間中は緊急の通知のみ送信されます。',
    digest: 'まとめ配信の間隔',
    digestDefault: '既定',
    minutes: (n) => `${n} 分`,
    loading: '読み込み中…',
    saved: '保存しました。',
    failed: (c) => `設定を保存できませんでした（${c}）。`,
    unreachable: (c) => `設定を読み込めませんでした（${c}）。`,
  },
};

/** The strings for a BCP 47 locale: its language if known, else English. */
export function stringsFor(locale) { return inLanguage(STRINGS, locale); }

/** table's entry for locale's language, else its English one. */
function inLanguage(table, locale) {
  const lang = String(locale || '').toLowerCase().split(/[-_]/)[0];
  return table[lang] || table.en;
}

const STYLE = `
:host { display: block; font: 14px/1.4 system-ui, sans-serif; color: #1b1f24; max-width: 34rem; }
.prefs { border: 1px solid #d0d7de; border-radius: 8px; background: #fff; }
h2 { font-size: 1rem; margin: 0; padding: .6rem .8rem; border-bottom: 1px solid #d0d7de; }
table { border-collapse: collapse; width: 100%; }
th, td { padding: .45rem .8rem; border-bottom: 1px solid #eaeef2; text-align: left; vertical-align: top; }
td { text-align: center; }
th[scope=col] { font-weight: 600; font-size: .8rem; color: #424a53; }
th[scope=col]:not(:first-child) { text-align: center; }
.reason { display: block; font-weight: normal; font-size: .75rem; color: #656d76; }
button[role=switch] { font: inherit; border: 1px solid #d0d7de; background: #f6f8fa; border-radius: 999px; padding: .1rem .6rem; cursor: pointer; min-width: 3.2rem; color: inherit; }
button[role=switch][aria-checked=true] { background: #1f883d; color: #fff; border-color: #1f883d; }
button[role=switch][aria-disabled=true] { cursor: not-allowed; opacity: .7; }
button:focus-visible { outline: 2px solid #0969da; outline-offset: 2px; }
dl { margin: 0; padding: .6rem .8rem; display: grid; grid-template-columns: auto 1fr; gap: .2rem .8rem; }
dt { font-weight: 600; }
dd { margin: 0; }
.note { font-size: .75rem; color: #656d76; }
.status { padding: .4rem .8rem; color: #656d76; margin: 0; min-height: 1.2em; }
fieldset { border: 0; border-top: 1px solid #eaeef2; margin: 0; padding: .6rem .8rem; }
legend { font-weight: 600; padding: 0; }
.budget-field { display: flex; gap: .6rem; align-items: center; margin: .3rem 0; }
.budget-field input { width: 4.5rem; font: inherit; }
.topics { list-style: none; margin: .3rem 0 0; padding: 0; }
.topics li { display: flex; gap: .6rem; align-items: center; justify-content: space-between; padding: .25rem 0; border-bottom: 1px solid #eaeef2; }
.topics li:last-child { border-bottom: 0; }
.topic-name { overflow-wrap: anywhere; }
input[aria-invalid=true] { border-color: #cf222e; }
`;

class HeraldPreferences extends HTMLElement {
  static get observedAttributes() { return ['api-base', 'lang']; }

  constructor() {
    super();
    this._tokenProvider = null;
    this.data = null;
    const root = this.attachShadow({ mode: 'open' });
    const style = document.createElement('style');
    style.textContent = STYLE;
    root.append(style);
    this.section = el('section', { class: 'prefs', part: 'preferences', 'aria-labelledby': 'heading' });
    this.heading = el('h2', { id: 'heading' });
    this.grid = el('table', { role: 'grid', 'aria-labelledby': 'heading', part: 'grid' });
    this.schedule = el('dl', { part: 'schedule' });
    this.status = el('p', { class: 'status', role: 'status', 'aria-live': 'polite' });
    this.budget = this._budgetForm(); // the notification budget's section, below
    this.topics = this._topicsSection(); // the topics and their mutes, below
    this.topicList = null; // the user's topics [{topic, muted}], once loaded
    this.section.append(this.heading, this.grid, this.schedule, this.budget, this.topics, this.status);
    root.append(this.section);
    this.grid.addEventListener('keydown', (e) => this._onKey(e));
    this.grid.addEventListener('click', (e) => {
      const b = e.target.closest('button[role=switch]');
      if (b) this.toggle(b.dataset.type, b.dataset.channel);
    });
    this._renderStrings();
  }

  /** An async function returning the end user's JWT. Setting it loads the preferences. */
  set tokenProvider(fn) {
    this._tokenProvider = fn;
    if (this.isConnected) this.refresh();
  }
  get tokenProvider() { return this._tokenProvider; }

  connectedCallback() { if (this._tokenProvider) this.refresh(); }

  attributeChangedCallback(name, old, value) {
    if (old === value || !this.isConnected) return;
    if (name === 'lang') this.render();
    else if (this._tokenProvider) this.refresh();
  }

  get apiBase() { return (this.getAttribute('api-base') || location.origin).replace(/\/+$/, ''); }
  get strings() { return stringsFor(this.getAttribute('lang') || (this.data && this.data.locale)); }

  _call(method, body) { return this._request(method, '/v1/me/preferences', body); }

  async _request(method, path, body) {
    if (!this._tokenProvider) throw new Error('herald-preferences: set tokenProvider first');
    const token = await this._tokenProvider();
    const headers = { Authorization: 'Bearer ' + token };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const resp = await fetch(this.apiBase + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const answer = await resp.json().catch(() => null);
    if (!resp.ok) {
      const err = new Error((answer && (answer.detail || answer.title)) || 'Herald answered ' + resp.status);
      err.status = resp.status;
      err.code = (answer && answer.code) || '';
      err.pointer = (answer && answer.pointer) || '';
      throw err;
    }
    return answer;
  }

  _fail(err, message) {
    this.status.textContent = message(err.code || err.status || err.message);
    this.dispatchEvent(new CustomEvent('herald-preferences-error', { detail: { status: err.status || 0, code: err.code || '', message: err.message } }));
  }

  /** Reloads the matrix, labels, schedule, budget and topics. */
  async refresh() {
    this.refreshTopics();
    this.grid.setAttribute('aria-busy', 'true');
    this.status.textContent = this.strings.loading;
    try {
      this.data = await this._call('GET');
      this.status.textContent = '';
      this.render();
    } catch (err) {
      this._fail(err, this.strings.unreachable);
    } finally {
      this.grid.removeAttribute('aria-busy');
    }
  }

  /** Flips one switch and saves it; a mandatory type's switch does not change. */
  async toggle(type, channel) {
    const cell = this.data && this.data.preferences[type] && this.data.preferences[type][channel];
    if (!cell || cell.source === 'mandatory' || this._saving) return;
    const enabled = !cell.enabled;
    this._saving = true;
    this._button(type, channel)?.setAttribute('aria-busy', 'true');
    try {
      this.data = await this._call('PUT', { preferences: { [type]: { [channel]: enabled } } });
      this.render();
      this.status.textContent = this.strings.saved;
      this.dispatchEvent(new CustomEvent('herald-preferences-change', { detail: { type, channel, enabled } }));
    } catch (err) {
      this._fail(err, this.strings.failed);
    } finally {
      this._saving = false;
      this._button(type, channel)?.removeAttribute('aria-busy');
      this._button(type, channel)?.focus();
    }
  }

  _button(type, channel) {
    return [...this.grid.querySelectorAll('button[role=switch]')].find((b) => b.dataset.type === type && b.dataset.channel === channel);
  }

  _renderStrings() {
    this.heading.textContent = this.strings.heading;
  }

  render() {
    const s = this.strings;
    this._renderStrings();
    this.grid.replaceChildren();
    this.schedule.replaceChildren();
    const d = this.data;
    if (!d) return;
    const names = Object.keys(d.preferences).sort((a, b) => label(d, a).localeCompare(label(d, b)));
    const channels = CHANNELS.filter((c) => names.some((n) => c in d.preferences[n]));
    const head = el('tr', { role: 'row' });
    head.append(el('th', { scope: 'col', role: 'columnheader' }, s.type));
    for (const c of channels) head.append(el('th', { scope: 'col', role: 'columnheader', id: 'ch-' + c }, s.channels[c] || c));
    this.grid.append(el('thead', { role: 'rowgroup' }));
    this.grid.firstChild.append(head);
    const body = el('tbody', { role: 'rowgroup' });
    let first = true;
    names.forEach((name, i) => {
      const row = el('tr', { role: 'row' });
      const th = el('th', { scope: 'row', role: 'rowheader', id: 'type-' + i }, label(d, name));
      const mandatory = d.types && d.types[name] ? d.types[name].mandatory : false;
      if (mandatory) th.append(el('span', { class: 'reason', id: 'reason-' + i }, s.mandatory));
      row.append(th);
      for (const c of channels) {
        const td = el('td', { role: 'gridcell' });
        const cell = d.preferences[name][c];
        if (cell) {
          const locked = cell.source === 'mandatory';
          const b = el('button', {
            type: 'button', role: 'switch', 'aria-checked': String(cell.enabled),
            'aria-labelledby': 'type-' + i + ' ch-' + c, 'data-type': name, 'data-channel': c,
            'data-source': cell.source, tabindex: first ? '0' : '-1',
          }, cell.enabled ? s.on : s.off);
          if (locked) {
            b.setAttribute('aria-disabled', 'true');
            b.setAttribute('aria-describedby', 'reason-' + i);
            b.title = s.mandatory;
          }
          first = false;
          td.append(b);
        }
        row.append(td);
      }
      body.append(row);
    });
    this.grid.append(body);

    const tz = d.timezone || 'UTC';
    const q = d.quietHours;
    this.schedule.append(el('dt', {}, s.quietHours),
      el('dd', { 'data-quiet-hours': q ? q.start + '-' + q.end : '' }, q ? s.quietWindow(q.start, q.end, tz) : s.quietNone));
    if (q) this.schedule.append(el('dd', { class: 'note', style: 'grid-column: 2' }, s.quietNote));
    this.schedule.append(el('dt', {}, s.digest), el('dd', {}, d.digestMinutes ? s.minutes(d.digestMinutes) : s.digestDefault));
    this._renderBudget();
    this._renderTopics();
  }

  // Arrow keys move between switches (one tab stop for the grid).
  _onKey(e) {
    const buttons = [...this.grid.querySelectorAll('button[role=switch]')];
    const i = buttons.indexOf(this.shadowRoot.activeElement);
    if (i < 0) return;
    const rowOf = (b) => b.closest('tr');
    let next = -1;
    switch (e.key) {
      case 'ArrowRight': next = Math.min(buttons.length - 1, i + 1); break;
      case 'ArrowLeft': next = Math.max(0, i - 1); break;
      case 'Home': next = 0; break;
      case 'End': next = buttons.length - 1; break;
      case 'ArrowDown':
      case 'ArrowUp': {
        const col = buttons[i].dataset.channel;
        const step = e.key === 'ArrowDown' ? 1 : -1;
        for (let j = i + step; j >= 0 && j < buttons.length; j += step) {
          if (buttons[j].dataset.channel === col && rowOf(buttons[j]) !== rowOf(buttons[i])) { next = j; break; }
        }
        if (next < 0) return;
        break;
      }
      default: return;
    }
    e.preventDefault();
    buttons[i].tabIndex = -1;
    buttons[next].tabIndex = 0;
    buttons[next].focus();
  }

  // ── The notification budget (issue 42) ────────────────────────────────
  // How many notifications the user accepts an hour and a day over every
  // channel; the rest wait for one summary. A form of its own: two number
  // fields within the catalog's bounds (the API's budget.max), Save, and
  // "Use the default". Saved with PUT {budget}; a refusal (422
  // invalid_budget) marks the field its pointer names.

  _budgetForm() {
    const form = el('form', { part: 'budget', 'data-budget': '', hidden: '' });
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      const value = (name) => Number(form.elements[name].value);
      this.saveBudget({ perHour: value('perHour'), perDay: value('perDay') });
    });
    form.addEventListener('click', (e) => {
      if (e.target.closest('[data-budget-default]')) this.saveBudget(null);
    });
    return form;
  }

  get budgetStrings() { return budgetStringsFor(this.getAttribute('lang') || (this.data && this.data.locale)); }

  _renderBudget() {
    const b = this.data && this.data.budget;
    this.budget.replaceChildren();
    if (!b) { this.budget.hidden = true; return; }
    const s = this.budgetStrings;
    this.budget.hidden = false;
    const fs = el('fieldset');
    fs.append(el('legend', {}, s.heading),
      el('p', { class: 'note', id: 'budget-note' }, s.note),
      el('p', { class: 'note', 'data-budget-source': b.source }, b.source === 'user' ? s.own : s.catalog(b.default.perHour, b.default.perDay)));
    for (const [name, max] of [['perHour', b.max.perHour], ['perDay', b.max.perDay]]) {
      const input = el('input', { type: 'number', name, id: 'budget-' + name, min: '1', max: String(max), step: '1', required: '',
        value: String(b[name]), 'aria-describedby': 'budget-note' });
      const lab = el('label', { for: 'budget-' + name }, s[name]);
      const field = el('div', { class: 'budget-field' });
      field.append(lab, input);
      fs.append(field);
    }
    fs.append(el('button', { type: 'submit', 'data-budget-save': '' }, s.save));
    if (b.source === 'user') fs.append(' ', el('button', { type: 'button', 'data-budget-default': '' }, s.useDefault));
    this.budget.append(fs);
  }

  /** Saves the user's budget ({perHour, perDay}), or null for the catalog's. */
  async saveBudget(budget) {
    if (this._saving) return;
    this._saving = true;
    for (const input of this.budget.querySelectorAll('input')) input.removeAttribute('aria-invalid');
    try {
      this.data = await this._call('PUT', { budget });
      this.render();
      this.status.textContent = this.strings.saved;
      this.dispatchEvent(new CustomEvent('herald-preferences-budget', { detail: { budget } }));
    } catch (err) {
      const field = /^\/budget\/(perHour|perDay)$/.exec(err.pointer || '');
      if (field) this.budget.querySelector('input[name=' + field[1] + ']')?.setAttribute('aria-invalid', 'true');
      this._fail(err, this.budgetStrings.failed);
    } finally {
      this._saving = false;
    }
  }

  // ── Topics (issue 39) ─────────────────────────────────────────────────
  // The topics the user follows (GET /v1/me/topics, every page), each with
  // a mute switch (PUT /v1/me/topics/{topic} {"muted"}): a muted topic's
  // sends reach the user as nothing, required notifications excepted, from
  // the next send on. Shown only when the user follows a topic.

  _topicsSection() {
    const sec = el('fieldset', { part: 'topics', 'data-topics': '', hidden: '' });
    sec.addEventListener('click', (e) => {
      const b = e.target.closest('button[role=switch]');
      if (b) this.muteTopic(b.dataset.topic, b.getAttribute('aria-checked') !== 'true');
    });
    sec.addEventListener('keydown', (e) => this._onTopicKey(e));
    return sec;
  }

  get topicStrings() { return topicStringsFor(this.getAttribute('lang') || (this.data && this.data.locale)); }

  /** Reloads the user's topics, every page. */
  async refreshTopics() {
    const topics = [];
    this.topics.setAttribute('aria-busy', 'true');
    try {
      let cursor = '';
      do {
        const page = await this._request('GET', '/v1/me/topics?limit=100' + (cursor ? '&cursor=' + encodeURIComponent(cursor) : ''));
        topics.push(...(page.topics || []).map((t) => ({ topic: t.topic, muted: !!t.muted })));
        cursor = page.nextCursor || '';
      } while (cursor);
      this.topicList = topics;
      this._renderTopics();
    } catch (err) {
      this._fail(err, this.topicStrings.unreachable);
    } finally {
      this.topics.removeAttribute('aria-busy');
    }
  }

  _renderTopics() {
    const list = this.topicList;
    const focused = this.shadowRoot.activeElement?.closest?.('[data-topics]') ? this.shadowRoot.activeElement.dataset.topic : null;
    this.topics.replaceChildren();
    if (!list || !list.length) { this.topics.hidden = true; return; }
    const s = this.topicStrings;
    const name = (t) => (typeof this.topicLabel === 'function' && this.topicLabel(t)) || t;
    this.topics.hidden = false;
    this.topics.append(el('legend', { id: 'topics-heading' }, s.heading), el('p', { class: 'note', id: 'topics-note' }, s.note));
    const ul = el('ul', { class: 'topics', 'aria-labelledby': 'topics-heading' });
    const hasFocusable = list.some((t) => t.topic === focused);
    list.forEach((t, i) => {
      const label = el('span', { class: 'topic-name', id: 'topic-' + i }, name(t.topic));
      const b = el('button', {
        type: 'button', role: 'switch', 'aria-checked': String(t.muted), 'data-topic': t.topic,
        'aria-labelledby': 'topic-mute-' + i + ' topic-' + i, 'aria-describedby': 'topics-note',
        tabindex: (hasFocusable ? t.topic === focused : i === 0) ? '0' : '-1',
      }, t.muted ? s.muted : s.notMuted);
      // The switch's name is "Mute <topic>", its state muted or not.
      const hidden = el('span', { id: 'topic-mute-' + i, hidden: '' }, s.mute);
      const li = el('li');
      li.append(label, hidden, b);
      ul.append(li);
    });
    this.topics.append(ul);
    if (focused) this._topicButton(focused)?.focus();
  }

  _topicButton(topic) {
    return [...this.topics.querySelectorAll('button[role=switch]')].find((b) => b.dataset.topic === topic);
  }

  /** Mutes (muted true) or unmutes one of the user's topics. */
  async muteTopic(topic, muted) {
    const t = this.topicList && this.topicList.find((x) => x.topic === topic);
    if (!t || this._saving) return;
    this._saving = true;
    const b = this._topicButton(topic);
    b?.setAttribute('aria-busy', 'true');
    try {
      const sub = await this._request('PUT', '/v1/me/topics/' + encodeURIComponent(topic), { muted });
      t.muted = !!sub.muted;
      this._renderTopics();
      this.status.textContent = this.strings.saved;
      this.dispatchEvent(new CustomEvent('herald-preferences-topic', { detail: { topic, muted: t.muted } }));
    } catch (err) {
      this._fail(err, this.topicStrings.failed);
    } finally {
      this._saving = false;
      this._topicButton(topic)?.removeAttribute('aria-busy');
    }
  }

  // ↑/↓/Home/End move between the mute switches (one tab stop for the list).
  _onTopicKey(e) {
    const buttons = [...this.topics.querySelectorAll('button[role=switch]')];
    const i = buttons.indexOf(this.shadowRoot.activeElement);
    if (i < 0) return;
    const next = { ArrowDown: Math.min(buttons.length - 1, i + 1), ArrowUp: Math.max(0, i - 1), Home: 0, End: buttons.length - 1 }[e.key];
    if (next === undefined) return;
    e.preventDefault();
    buttons[i].tabIndex = -1;
    buttons[next].tabIndex = 0;
    buttons[next].focus();
  }
}

/** The topics section's strings. */
export const TOPIC_STRINGS = {
  en: {
    heading: 'Topics you follow',
    note: 'A muted topic sends you nothing; required notifications still arrive.',
    mute: 'Mute',
    muted: 'muted', notMuted: 'on',
    failed: (c) => `Could not change the topic (${c}).`,
    unreachable: (c) => `Could not load your topics (${c}).`,
  },
  ja: {
    heading: 'フォロー中のトピック',
    note: 'ミュートしたトピックからは通知が届きません。必須の通知は届きます。',
    mute: 'ミュート',
    muted: 'ミュート中', notMuted: 'オン',
    failed: (c) => `トピックを変更できませんでした（${c}）。`,
    unreachable: (c) => `トピックを読み込めませんでした（${c}）。`,
  },
};

/** The budget section's strings (apart from STRINGS: one section, one table). */
export const BUDGET_STRINGS = {
  en: {
    heading: 'How many notifications',
    note: 'Email, SMS and push together. Beyond this, notifications stay in your inbox and arrive as one summary; urgent and required ones always go.',
    perHour: 'At most an hour',
    perDay: 'At most a day',
    own: 'Your own limit.',
    catalog: (h, d) => `The default: ${h} an hour, ${d} a day.`,
    save: 'Save limit',
    useDefault: 'Use the default',
    failed: (c) => `Could not save your limit (${c}).`,
  },
  ja: {
    heading: '通知の上限',
    note: 'メール・SMS・プッシュの合計です。上限を超えた通知は受信箱に届き、まとめて一通でお送りします。緊急・必須の通知は常に送信されます。',
    perHour: '1時間あたりの上限',
    perDay: '1日あたりの上限',
    own: 'ご自身で設定した上限です。',
    catalog: (h, d) => `既定：1時間に${h}件、1日に${d}件。`,
    save: '上限を保存',
    useDefault: '既定に戻す',
    failed: (c) => `上限を保存できませんでした（${c}）。`,
  },
};

function budgetStringsFor(locale) { return inLanguage(BUDGET_STRINGS, locale); }
function topicStringsFor(locale) { return inLanguage(TOPIC_STRINGS, locale); }

function label(d, name) {
  return (d.types && d.types[name] && d.types[name].label) || name;
}

function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

if (!customElements.get('herald-preferences')) customElements.define('herald-preferences', HeraldPreferences);
export { HeraldPreferences };
