// Small DOM helpers shared by the views.

/**
 * h('button.primary', {onclick, type:'button'}, 'Send') builds an element:
 * the tag may carry .classes and a #id; attributes named on* are listeners,
 * false/null attributes are left out; children are nodes or text.
 */
export function h(spec, attrs = {}, ...children) {
  const [, tag, rest = ''] = spec.match(/^([a-z0-9-]+)(.*)$/i);
  const el = document.createElement(tag);
  for (const part of rest.match(/[.#][^.#]+/g) || []) {
    if (part[0] === '.') el.classList.add(part.slice(1));
    else el.id = part.slice(1);
  }
  if (attrs === null || typeof attrs !== 'object' || attrs instanceof Node || Array.isArray(attrs)) {
    children.unshift(attrs);
    attrs = {};
  }
  for (const [name, value] of Object.entries(attrs)) {
    if (value === false || value === null || value === undefined) continue;
    if (name.startsWith('on')) el.addEventListener(name.slice(2), value);
    else if (name === 'class') el.classList.add(...String(value).split(/\s+/).filter(Boolean));
    else if (name in el && typeof value !== 'string') el[name] = value;
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

let fieldSeq = 0;

/** A labelled form field: label, control (given an id) and an optional hint it is described by. */
export function field(label, control, { hint } = {}) {
  const id = control.id || `field-${++fieldSeq}`;
  control.id = id;
  const hintEl = hint ? h('p.hint', { id: `${id}-hint` }, hint) : null;
  if (hintEl) control.setAttribute('aria-describedby', hintEl.id);
  return h('div.field', h('label', { for: id }, label), control, hintEl);
}

const SVG = 'http://www.w3.org/2000/svg';

// 24×24 stroke icons.
const paths = {
  chat: 'M4 5.5A2.5 2.5 0 0 1 6.5 3h11A2.5 2.5 0 0 1 20 5.5v8a2.5 2.5 0 0 1-2.5 2.5H10l-4.5 4v-4h0A1.5 1.5 0 0 1 4 14.5z',
  clock: 'M12 21a9 9 0 1 0 0-18 9 9 0 0 0 0 18zM12 7v5l3 2',
  settings: 'M12 15a3 3 0 1 0 0-6 3 3 0 0 0 0 6zM19.4 15a1.7 1.7 0 0 0 .3 1.8l.1.1a2 2 0 1 1-2.8 2.8l-.1-.1a1.7 1.7 0 0 0-1.8-.3 1.7 1.7 0 0 0-1 1.5V21a2 2 0 1 1-4 0v-.1a1.7 1.7 0 0 0-1.1-1.5 1.7 1.7 0 0 0-1.8.3l-.1.1a2 2 0 1 1-2.8-2.8l.1-.1a1.7 1.7 0 0 0 .3-1.8 1.7 1.7 0 0 0-1.5-1H3a2 2 0 1 1 0-4h.1a1.7 1.7 0 0 0 1.5-1.1 1.7 1.7 0 0 0-.3-1.8l-.1-.1a2 2 0 1 1 2.8-2.8l.1.1a1.7 1.7 0 0 0 1.8.3H9a1.7 1.7 0 0 0 1-1.5V3a2 2 0 1 1 4 0v.1a1.7 1.7 0 0 0 1 1.5 1.7 1.7 0 0 0 1.8-.3l.1-.1a2 2 0 1 1 2.8 2.8l-.1.1a1.7 1.7 0 0 0-.3 1.8V9a1.7 1.7 0 0 0 1.5 1H21a2 2 0 1 1 0 4h-.1a1.7 1.7 0 0 0-1.5 1z',
  bell: 'M18 8a6 6 0 1 0-12 0c0 7-3 9-3 9h18s-3-2-3-9M13.7 21a2 2 0 0 1-3.4 0',
  send: 'M4 12l16-8-6 16-2.5-6.5z M11.5 13.5L20 4',
  plus: 'M12 5v14M5 12h14',
  back: 'M15 18l-6-6 6-6',
  tool: 'M14.7 6.3a4 4 0 0 0-5.4 5.4L3 18l3 3 6.3-6.3a4 4 0 0 0 5.4-5.4l-2.5 2.5-2.4-.6-.6-2.4z',
  alert: 'M12 9v4m0 4h.01M10.3 3.9L1.8 18a2 2 0 0 0 1.7 3h17a2 2 0 0 0 1.7-3L13.7 3.9a2 2 0 0 0-3.4 0z',
  check: 'M20 6L9 17l-5-5',
  copy: 'M9 9h10v12H9zM5 15H4a1 1 0 0 1-1-1V4a1 1 0 0 1 1-1h10a1 1 0 0 1 1 1v1',
  trash: 'M3 6h18M8 6V4h8v2M19 6l-1 14H6L5 6',
  device: 'M7 2h10a1 1 0 0 1 1 1v18a1 1 0 0 1-1 1H7a1 1 0 0 1-1-1V3a1 1 0 0 1 1-1zM11 18h2',
  sparkle: 'M12 3l1.8 5.2L19 10l-5.2 1.8L12 17l-1.8-5.2L5 10l5.2-1.8zM19 15l.8 2.2L22 18l-2.2.8L19 21l-.8-2.2L16 18l2.2-.8z',
  edit: 'M4 20h4L19 9l-4-4L4 16zM14 6l4 4',
  stop: 'M7 7h10v10H7z',
  repeat: 'M17 2l3 3-3 3M4 11V9a4 4 0 0 1 4-4h12M7 22l-3-3 3-3M20 13v2a4 4 0 0 1-4 4H4',
};

export function icon(name, { size = 20, label } = {}) {
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('width', size);
  svg.setAttribute('height', size);
  svg.setAttribute('fill', 'none');
  svg.setAttribute('stroke', 'currentColor');
  svg.setAttribute('stroke-width', '1.8');
  svg.setAttribute('stroke-linecap', 'round');
  svg.setAttribute('stroke-linejoin', 'round');
  svg.classList.add('icon');
  if (label) {
    svg.setAttribute('role', 'img');
    svg.setAttribute('aria-label', label);
  } else {
    svg.setAttribute('aria-hidden', 'true');
  }
  const path = document.createElementNS(SVG, 'path');
  path.setAttribute('d', paths[name]);
  svg.append(path);
  return svg;
}

/** The app's glyph (the icon's bubble and dot), for empty states. */
export function glyph() {
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('viewBox', '0 0 100 100');
  svg.setAttribute('aria-hidden', 'true');
  svg.classList.add('glyph');
  svg.innerHTML = '<rect class="glyph-bubble" x="22" y="30" width="56" height="36" rx="11"/>' +
    '<path class="glyph-bubble" d="M30 60 L27 79 L47 64 Z"/>' +
    '<circle class="glyph-gap" cx="70" cy="30" r="13.5"/><circle class="glyph-dot" cx="70" cy="30" r="8.5"/>' +
    '<rect class="glyph-line" x="32" y="38.7" width="26" height="5.6" rx="2.8"/><rect class="glyph-line" x="32" y="48.7" width="18" height="5.6" rx="2.8"/>';
  return svg;
}

/** An empty state: glyph, heading, text and optional actions. */
export function emptyState({ title, text, actions = [], headingLevel = 2 }) {
  return h('div.empty', glyph(), h(`h${headingLevel}`, title), text && h('p', text), actions.length ? h('div.actions', actions) : null);
}

/** Announces text to screen readers through the polite live region. */
export function announce(text) {
  const region = document.getElementById('announcer');
  region.textContent = '';
  requestAnimationFrame(() => { region.textContent = text; });
}

let toastTimer;

/** Shows a short message at the bottom of the screen (also announced). */
export function toast(text, { error = false } = {}) {
  const el = document.getElementById('toast');
  el.textContent = text;
  el.classList.toggle('error', error);
  el.classList.add('show');
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => el.classList.remove('show'), 4000);
}

const friendly = {
  NETWORK: 'The server cannot be reached. Check your connection and try again.',
  INVALID_CLIENT_TOKEN: 'The server needs an access token. Add it in Settings → Server.',
  UNAUTHORIZED: 'The server refused the request: its access token is missing or expired.',
  PUSH_SUBSCRIPTION_MISSING: 'This account has no device for notifications yet. Turn on notifications first.',
  INVALID_PUSH_SUBSCRIPTION: 'The server refused this browser’s push subscription.',
  LLM_CALL_FAILED: 'The model could not be reached or answered with an error.',
  INVALID_API_URL: 'The server refused this model’s API URL: it calls only models on public hosts, so that no one can make it reach a private network (a model on 127.0.0.1, localhost or your LAN is refused). To use a model on your own machine, the server’s operator either starts amsg with --llm-api-url (and --llm-model) pointing at it, and you leave the API URL, key and model in Settings empty; or, on a single-user machine they trust, starts amsg with --allow-private-llm.',
  LOOP_EXCEEDED: 'The assistant used too many tool steps and stopped.',
  TASK_NOT_FOUND: 'That scheduled message no longer exists.',
  TASK_ALREADY_COMPLETED: 'That scheduled message has already been sent or has failed, so it can no longer be changed.',
  INVALID_TIMESTAMP: 'Pick a time in the future.',
  VAPID_NOT_CONFIGURED: 'The server has no push keys configured.',
  SUBSCRIBE_TIMEOUT: 'The browser did not finish turning on notifications. It may not reach its push service from this network (a firewall, VPN or privacy setting can block it). Try again, or try another network or browser.',
  PUSH_ENDPOINT_ZOMBIE: 'The browser keeps handing out a dead push endpoint. Restart the browser and try again.',
  NOT_INITIALISED: 'This browser is not connected to the server yet.',
};

/** A sentence for an error: a known code's explanation, else its message. */
export function describeError(err) {
  if (!err) return 'Something went wrong.';
  if (err.code && friendly[err.code]) return friendly[err.code];
  return err.message || String(err);
}

/** The error's code and the server's own words, for a details line. */
export function errorDetail(err) {
  if (!err || !err.code) return '';
  return err.message && friendly[err.code] ? `${err.code}: ${err.message}` : err.code;
}

const relative = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });

/** "in 5 minutes", "yesterday", … for a time in ms. */
export function relativeTime(ms, now = Date.now()) {
  const diff = ms - now;
  // Each unit while its rounded count stays below the next unit: 23.6 hours
  // is "tomorrow", not "in 24 hours".
  const steps = [[1e3, 60, 'second'], [60e3, 60, 'minute'], [3600e3, 24, 'hour'], [86400e3, 7, 'day'], [7 * 86400e3, Infinity, 'week']];
  for (const [unit, below, name] of steps) {
    const n = Math.round(diff / unit);
    if (Math.abs(n) < below) return relative.format(n, name);
  }
  return '';
}

export function formatDateTime(ms, timeZone) {
  const options = { weekday: 'short', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' };
  try {
    return new Intl.DateTimeFormat(undefined, timeZone ? { ...options, timeZone } : options).format(ms);
  } catch {
    return new Intl.DateTimeFormat(undefined, options).format(ms);
  }
}

export function formatTime(ms) {
  return new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' }).format(ms);
}

/** Copies text, with a fallback for browsers without the async clipboard. */
export async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    return false;
  }
}
