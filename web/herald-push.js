// herald-push.js — Web Push for Herald in the browser: register a service
// worker, subscribe with the deployment's VAPID key, hand the subscription to
// the app, unsubscribe. Plain ES module, no dependencies, no build step.
//
// The kit never holds a service credential. It reads the VAPID key with the
// end user's token (GET /v1/push/config) and gives the subscription to the
// app's own backend through a callback; the backend registers it with
// Herald's service route POST /v1/users/{userId}/push-subscriptions (for
// example with the Go client's CreatePushSubscription).
//
//   import { HeraldPush } from './herald-push.js';
//   const push = new HeraldPush({
//     apiBase: 'https://abc.execute-api.eu-west-1.amazonaws.com',
//     getToken: async () => myAuth.accessToken(),
//     serviceWorkerUrl: '/herald-sw.js',
//     onSubscription: (sub) => fetch('/api/push-subscriptions', {method: 'POST', body: JSON.stringify(sub)}),
//     onUnsubscribe: (sub) => fetch('/api/push-subscriptions', {method: 'DELETE', body: JSON.stringify(sub)}),
//   });
//   button.onclick = () => push.subscribe();   // must follow a user gesture

/** Whether this browser can receive Web Push at all. */
export function pushSupported() {
  return typeof navigator !== 'undefined' && 'serviceWorker' in navigator &&
    typeof window !== 'undefined' && 'PushManager' in window && 'Notification' in window;
}

/** Decodes a base64url string (a VAPID key) to bytes. */
export function base64UrlToBytes(s) {
  const b64 = s.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (s.length % 4)) % 4);
  const raw = atob(b64);
  const out = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i);
  return out;
}

/** A Herald error answer (problem+json) or a failed request. */
export class HeraldError extends Error {
  constructor(status, problem) {
    super(problem?.detail || problem?.title || `Herald answered ${status}`);
    this.name = 'HeraldError';
    this.status = status;
    this.code = problem?.code || '';
    this.pointer = problem?.pointer || '';
  }
}

export class HeraldPush {
  /**
   * @param {object} o
   * @param {string} o.apiBase            Herald's API URL (the stack's ApiUrl).
   * @param {() => Promise<string>|string} o.getToken  the end user's JWT, from the app.
   * @param {string} o.serviceWorkerUrl   the app's service worker (herald-sw.js, or one that importScripts it).
   * @param {string} [o.scope]            registration scope (default: the worker's directory).
   * @param {(sub: object) => any} o.onSubscription  receives PushSubscription.toJSON(); send it to your backend.
   * @param {(sub: object) => any} [o.onUnsubscribe] receives the removed subscription's JSON.
   * @param {(reg: ServiceWorkerRegistration) => PushManager} [o.pushManager]  stand-in for
   *        registration.pushManager (the dev console uses the local push service).
   */
  constructor(o) {
    if (!o || !o.apiBase || !o.getToken || !o.serviceWorkerUrl || !o.onSubscription) {
      throw new TypeError('HeraldPush needs apiBase, getToken, serviceWorkerUrl and onSubscription');
    }
    this.o = o;
    this.apiBase = o.apiBase.replace(/\/+$/, '');
  }

  /** The deployment's VAPID public key (base64url), read with the user's token. */
  async vapidPublicKey() {
    const token = await this.o.getToken();
    const resp = await fetch(this.apiBase + '/v1/push/config', { headers: { Authorization: 'Bearer ' + token } });
    const body = await resp.json().catch(() => null);
    if (!resp.ok) throw new HeraldError(resp.status, body);
    return body.vapidPublicKey;
  }

  /** Registers the service worker and resolves when it is active. */
  async register() {
    const opts = this.o.scope ? { scope: this.o.scope } : undefined;
    const reg = await navigator.serviceWorker.register(this.o.serviceWorkerUrl, opts);
    await waitActive(reg);
    return reg;
  }

  pushManagerOf(reg) {
    return this.o.pushManager ? this.o.pushManager(reg) : reg.pushManager;
  }

  /**
   * Asks for permission (call it from a click), subscribes with the VAPID key
   * and hands the subscription's JSON to onSubscription, which it returns.
   */
  async subscribe() {
    if (!this.o.pushManager && !pushSupported()) throw new Error('this browser does not support Web Push');
    const permission = await Notification.requestPermission();
    if (permission !== 'granted') throw new Error('notification permission ' + permission);
    const reg = await this.register();
    const key = await this.vapidPublicKey();
    const pm = this.pushManagerOf(reg);
    let sub = await pm.getSubscription();
    if (sub && !sameKey(sub, key)) { // subscribed with another deployment's key
      await sub.unsubscribe();
      sub = null;
    }
    if (!sub) sub = await pm.subscribe({ userVisibleOnly: true, applicationServerKey: base64UrlToBytes(key) });
    const json = typeof sub.toJSON === 'function' ? sub.toJSON() : sub;
    await this.o.onSubscription(json);
    return json;
  }

  /** The current subscription's JSON, or null. */
  async subscription() {
    const reg = await navigator.serviceWorker.getRegistration(this.o.scope || this.o.serviceWorkerUrl);
    if (!reg) return null;
    const sub = await this.pushManagerOf(reg).getSubscription();
    return sub ? (typeof sub.toJSON === 'function' ? sub.toJSON() : sub) : null;
  }

  /** Unsubscribes this browser and tells the app (onUnsubscribe). */
  async unsubscribe() {
    const reg = await navigator.serviceWorker.getRegistration(this.o.scope || this.o.serviceWorkerUrl);
    if (!reg) return false;
    const sub = await this.pushManagerOf(reg).getSubscription();
    if (!sub) return false;
    const json = typeof sub.toJSON === 'function' ? sub.toJSON() : sub;
    await sub.unsubscribe();
    if (this.o.onUnsubscribe) await this.o.onUnsubscribe(json);
    return true;
  }
}

function sameKey(sub, key) {
  const k = sub.options && sub.options.applicationServerKey;
  if (!k) return true; // not exposed: keep it
  const a = new Uint8Array(k), b = base64UrlToBytes(key);
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

function waitActive(reg) {
  if (reg.active) return Promise.resolve(reg);
  const sw = reg.installing || reg.waiting;
  return new Promise((resolve, reject) => {
    if (!sw) return reject(new Error('service worker did not install'));
    sw.addEventListener('statechange', () => {
      if (sw.state === 'activated') resolve(reg);
      if (sw.state === 'redundant') reject(new Error('service worker became redundant'));
    });
  });
}
