// herald-sw.js — the service worker side of Herald's Web Push: shows the
// notification a push carries and focuses or opens its URL on click.
// Register it directly, or pull it into the app's own worker with
// importScripts('/herald-sw.js'). No dependencies.
//
// Herald's push payload is JSON: {"id": "...", "title": "...", "body": "...", "url": "..."}.
// The id is used as the notification's tag, so a repeated push replaces
// rather than duplicates.

/* global self, clients */
(function () {
  'use strict';

  function payloadOf(data) {
    if (!data) return {};
    try {
      const v = data.json();
      return v && typeof v === 'object' ? v : { body: String(v) };
    } catch (_) {
      return { body: data.text() };
    }
  }

  // Only http(s) targets are opened: a payload cannot make the worker open
  // javascript: or data: URLs.
  function safeURL(u) {
    if (!u) return '';
    try {
      const parsed = new URL(u, self.location.origin);
      return parsed.protocol === 'https:' || parsed.protocol === 'http:' ? parsed.href : '';
    } catch (_) {
      return '';
    }
  }

  function show(p) {
    const options = { body: p.body || '', data: { id: p.id || '', url: safeURL(p.url) } };
    if (p.id) options.tag = p.id;
    return self.registration.showNotification(p.title || 'Notification', options);
  }

  // After the notification is shown, open pages of the origin hear of it
  // ({type: "herald:push", notification}), so that an inbox can refresh at
  // once instead of at its next poll.
  function tellPages(p) {
    return self.clients.matchAll({ type: 'window', includeUncontrolled: true }).then(function (list) {
      const notification = { id: p.id || '', title: p.title || '', body: p.body || '', url: safeURL(p.url) };
      for (const c of list) c.postMessage({ type: 'herald:push', notification: notification });
    });
  }

  self.addEventListener('push', function (event) {
    const p = payloadOf(event.data);
    event.waitUntil(show(p).then(function () { return tellPages(p); }));
  });

  self.addEventListener('notificationclick', function (event) {
    event.notification.close();
    const target = (event.notification.data && event.notification.data.url) || self.registration.scope;
    event.waitUntil(clients.matchAll({ type: 'window', includeUncontrolled: true }).then(function (list) {
      for (const c of list) {
        if (c.url === target && 'focus' in c) return c.focus();
      }
      return clients.openWindow ? clients.openWindow(target) : undefined;
    }));
  });

  // Take over at once so that a freshly registered worker receives pushes.
  self.addEventListener('install', function () { self.skipWaiting(); });
  self.addEventListener('activate', function (event) { event.waitUntil(self.clients.claim()); });
})();
