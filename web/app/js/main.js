// The app shell: the client, the router, the navigation, the worker's
// messages, and the re-registration of this device on every start.

import { ApiError, Client } from './api.js';
import * as conversations from './conversations.js';
import * as device from './device.js';
import * as settings from './settings.js';
import * as sync from './sync.js';
import { announce, describeError, h, icon } from './ui.js';
import * as worker from './worker.js';
import * as chat from './views/chat.js';
import * as interrupt from './views/interrupt.js';
import * as onboarding from './views/onboarding.js';
import * as schedule from './views/schedule.js';
import * as settingsView from './views/settings.js';

const app = {
  client: new Client({ userId: settings.userId(), token: settings.token() }),
  initialising: null,

  /** Resolves once the user key is known (fetched once, again after a failure). */
  ready() {
    if (!this.initialising) {
      this.initialising = this.client.init().catch((err) => {
        this.initialising = null;
        throw err;
      });
    }
    return this.initialising;
  },

  setToken(value) {
    settings.setToken(value);
    this.client.token = settings.token();
    this.initialising = null;
    this.client.userKey = '';
    start();
  },

  async setUserId(id) {
    settings.setUserId(id);
    this.client = new Client({ userId: settings.userId(), token: settings.token() });
    this.initialising = null;
    settings.setDevice(null);
    await start();
  },

  deviceChanged() {
    renderStatus();
  },

  /** Records the pushes this browser missed (sync.js); failures are only logged. */
  catchUp() {
    return sync.catchUp(this, onPush).catch((err) => console.warn('[amsg] catching up failed:', describeError(err)));
  },

  /** Fills the conversation of a session this browser does not have from the server. */
  restore(sessionId) {
    return sync.restore(this, sessionId, onPush);
  },
};

// --- routing -------------------------------------------------------------------

const routes = [
  [/^#\/welcome$/, onboarding.render],
  [/^#\/chat(?:\/([^/]+))?$/, chat.render],
  [/^#\/interrupt\/([^/]+)$/, interrupt.render],
  [/^#\/schedule$/, schedule.renderList],
  [/^#\/schedule\/new$/, schedule.renderForm],
  [/^#\/schedule\/edit\/([^/]+)$/, schedule.renderForm],
  [/^#\/settings$/, settingsView.render],
];

const main = document.getElementById('main');
let current = null;
let firstRoute = true;

function defaultRoute() {
  return device.enabled() ? '#/chat' : '#/welcome';
}

function route() {
  const hash = location.hash;
  if (hash && !hash.startsWith('#/')) return; // an in-page anchor such as the skip link
  const target = hash && hash !== '#/' ? hash : defaultRoute();
  let match = null;
  let render = null;
  for (const [pattern, fn] of routes) {
    match = pattern.exec(target);
    if (match) {
      render = fn;
      break;
    }
  }
  if (!render) {
    location.replace(defaultRoute());
    return;
  }
  if (current && current.destroy) current.destroy();
  current = render(app, match.slice(1).filter((p) => p !== undefined));
  main.replaceChildren(current.el);
  document.title = `${current.title} · amsg`;
  for (const link of document.querySelectorAll('.nav a')) {
    const section = link.getAttribute('href');
    const active = target === section || target.startsWith(`${section}/`);
    if (active) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  // Move focus to the new view for keyboard and screen-reader users, but
  // not on the first load, where the browser's own order is right.
  if (!firstRoute && current.focus) current.focus.focus({ preventScroll: true });
  firstRoute = false;
  window.scrollTo(0, 0);
}

// --- shell -------------------------------------------------------------------------

function renderNav() {
  const items = [['#/chat', 'chat', 'Chat'], ['#/schedule', 'clock', 'Schedule'], ['#/settings', 'settings', 'Settings']];
  document.getElementById('nav').replaceChildren(h('ul', items.map(([href, name, label]) =>
    h('li', h('a', { href }, icon(name, { size: 22 }), h('span', label))))));
}

let serverProblem = null;

function renderStatus() {
  const el = document.getElementById('device-status');
  let text;
  let state;
  if (serverProblem) {
    [text, state] = [serverProblem, 'error'];
  } else if (device.enabled()) {
    [text, state] = ['Notifications on', 'ok'];
  } else if (device.permission() === 'denied') {
    [text, state] = ['Notifications blocked', 'warn'];
  } else {
    [text, state] = ['Notifications off', 'warn'];
  }
  el.className = `device-status ${state}`;
  el.replaceChildren(h('span.status-dot', { 'aria-hidden': 'true' }), h('span', text));
  if (state !== 'ok' && !serverProblem) el.append(h('a.visually-hidden-focusable', { href: '#/welcome' }, 'Set up'));
}

// --- the worker's messages ----------------------------------------------------------

function onPush(payload) {
  const open = conversations.find(payload.sessionId);
  const viewing = open && location.hash === `#/chat/${encodeURIComponent(open.id)}`;
  const { added, conversation } = conversations.ingest(payload, { unread: !viewing || document.visibilityState !== 'visible' });
  if (added && payload.messageKind === 'content' && !viewing) {
    announce(`New message from ${conversation.contactName || payload.contactName || 'amsg'}`);
  }
  // A summary of a long reply: the whole one is in the outbox.
  if (payload._truncated && typeof payload._truncated === 'object') app.catchUp();
}

function onNotificationClick(url, data) {
  if (data && data.payload && typeof data.payload === 'object') conversations.ingest(data.payload);
  try {
    const target = new URL(url, location.origin);
    if (target.origin === location.origin && target.hash.startsWith('#/')) location.hash = target.hash;
  } catch {
    // An unparsable url leaves the view as it is.
  }
}

// --- start-up -----------------------------------------------------------------------

/**
 * Fetches the user key, catches up on the pushes this browser missed, and
 * registers this device again if it was registered: the reference's advice
 * for every start (it is idempotent and repairs a subscription the server
 * dropped). A device the user removed stays removed until the onboarding is
 * done again.
 */
/** Learns from GET /capabilities whether the server has its operator's model; the chat may then start without model settings. */
async function learnOperatorModel() {
  const capabilities = await app.client.capabilities().catch(() => null);
  const had = settings.hasOperatorModel();
  settings.setOperatorModel(Boolean(capabilities && Array.isArray(capabilities.features) && capabilities.features.includes('operator-model')));
  if (settings.hasOperatorModel() !== had) route();
}

async function start() {
  serverProblem = null;
  try {
    await app.ready();
    app.catchUp();
    learnOperatorModel(); // not awaited: registering this device must not wait for it
    if (device.enabled() && device.support() === 'ok') await device.register(app.client);
  } catch (err) {
    if (err instanceof ApiError && (err.code === 'NETWORK' || err.code === 'INVALID_CLIENT_TOKEN' || err.status >= 500)) {
      serverProblem = err.code === 'NETWORK' ? 'Offline' : err.code === 'INVALID_CLIENT_TOKEN' ? 'Token needed' : 'Server error';
    }
    console.warn('[amsg] start-up registration failed:', describeError(err));
  }
  renderStatus();
}

renderNav();
renderStatus();
worker.listen({ push: onPush, click: onNotificationClick });
if (worker.supported) {
  worker.register().catch((err) => console.warn('[amsg] service worker registration failed:', err.message));
}
addEventListener('hashchange', route);
addEventListener('online', start);
// Back to a page that sat in the background: what arrived meanwhile went to
// the worker alone while no window was open.
document.addEventListener('visibilitychange', () => {
  if (document.visibilityState === 'visible') app.catchUp();
});
route();
start();
