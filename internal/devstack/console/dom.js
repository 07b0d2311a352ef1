// What the console's pages share: DOM building with textContent only (never
// innerHTML: captured mail, payloads and API answers are data, not markup),
// status pills, times with their date, and JSON reads.

export const $ = (sel) => document.querySelector(sel);

export function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== undefined && v !== null) e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(c ?? ''));
  return e;
}

export const pill = (text, cls) => el('span', { class: 'pill ' + (cls || text) }, text);
// Date and time: a console left open over midnight (or fed a clock moved
// with /_dev/clock) must not show yesterday's items as today's.
export const stamp = (d) => d.toLocaleString(undefined, { year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' });
export const time = (iso) => (iso ? stamp(new Date(iso)) : '');

export async function getJSON(path) {
  const r = await fetch(path, { cache: 'no-store' });
  if (!r.ok) throw new Error(path + ': ' + r.status);
  return r.json();
}

// devCallerOf is the X-Herald-Dev-Caller name of a caller as Herald stores
// it: the runner makes the header's name the IAM user ARN
// arn:aws:iam::<account>:user/<name> (apigw.go).
export const devCallerOf = (caller) => (/^arn:aws:iam::\d+:user\/(.+)$/.exec(caller || '') || [])[1] || caller || '';
