/*
 * amsg service worker, served by the Go package amsg/sw at /sw.js (root scope).
 *
 * It speaks the page protocol of @rei-standard/amsg-sw (HEAD behaviour), so pages
 * written for that package work unchanged, and adds what the package leaves to
 * the app: install/activate, an offline app shell, notification clicks and
 * pushsubscriptionchange.
 *
 * Page protocol
 *   SW → page   {type:'REI_AMSG_PUSH', event, payload}   event is one of REI_SW_EVENT
 *   page → SW   {type:'REI_AMSG_DELIVER', payload, source?, requestId?}
 *               ack on ports[0] (else event.source), no `type` field:
 *               {ok:true, duplicate, key, requestId, dedupeError?} | {ok:false, error, key?, requestId}
 *               (dedupeError: the dedupe store failed, so the payload was delivered without it)
 *   page → SW   {type:'REI_ENQUEUE_REQUEST', request:{url, method?, headers?, body?}}
 *               reply {type:'REI_QUEUE_RESULT', ok:true, queueId, delivered, dropped?, status?, error?}
 *               (delivered: the immediate flush sent it; dropped: the server refused it with a 4xx)
 *               | {type:'REI_QUEUE_RESULT', ok:false, error}
 *   SW → pages  {type:'REI_QUEUE_RESULT', ok:false, queueId, dropped:true, status, error,
 *                request:{url, method}} to every window when a flush drops a queued request
 *   SW → pages  MULTIPART_EXPIRED notices carry a reason: ttl-expired, invalid-chunk,
 *               chunk-conflict, size-limit-exceeded, restore-failed or storage-failed
 *   page → SW   {type:'REI_FLUSH_QUEUE'}
 *   SW → page   {type:'NOTIFICATION_CLICKED', url, data} to the window a click focused
 *
 * IndexedDB
 *   rei_amsg_sw_dedupe_v1 (v1)  delivery-dedupe {key, firstSeenAt, expiresAt, source, messageKind,
 *                                notificationShown, notificationStatePending}, index expiresAt
 *   rei-sw (v3)                 request-outbox (autoIncrement id), multipart-pending, multipart-chunk,
 *                                multipart-done — the layout of amsg-sw
 *   amsg-app (v1)               store `config` (out-of-line keys), key 'client', WRITTEN BY THE PAGE:
 *                                {apiBase: '/api/v1' or an absolute URL, userId: UUID v4,
 *                                 userKeyHex: 64 hex (GET /get-user-key), clientToken?: string,
 *                                 vapidPublicKey: base64url (GET /vapid-public-key),
 *                                 endpoint?: this device's push endpoint, named in approval decisions}
 *                                pushsubscriptionchange reads it to re-subscribe and PUT the new
 *                                subscription encrypted, as amsg-client does; every Web Push reads
 *                                it to report the device seen (POST /device-seen) and to complete a
 *                                _truncated summary from GET /outbox. Either side may create the
 *                                database; both create the same single store.
 *                              key 'outboxCursor.<userId>', WRITTEN BY THE WORKER: the outbox
 *                                cursor up to which it looked for the whole of a truncated push
 *   amsg-receipts (v1)          store `queue` {key: '<token> <type>', report, queuedAt}: receipts not yet
 *                                accepted by POST /receipts (see Receipts below)
 *
 * Visible pushes (iOS revokes a subscription after a few Web Pushes that show nothing)
 *   A Web Push always shows a notification while no window is visible: content as amsg-sw does,
 *   tool_request and error (also while a window is visible), reasoning, unknown kinds, duplicates
 *   and the chunks of an unfinished _multipart message as quiet ones (silent; a session's under
 *   'amsg-session-<sessionId>', a message still arriving under 'amsg-receiving-<multipart id>'),
 *   which the session's content, or the completed message, closes. While a window is visible
 *   Chrome and Firefox waive the rule and only tool_request and error show; on an Apple
 *   subscription (its endpoint's host is *.push.apple.com, read from getSubscription() at each
 *   push) every push shows whatever the windows, since iOS waives nothing and revokes after one
 *   silent push once a grace period of a few days is over (upstream @80f471d): what would show
 *   nothing there shows quietly under the session's tag, replaced by the next. Payloads delivered by the page
 *   (REI_AMSG_DELIVER) follow amsg-sw's rules alone. Declarative Web Push members (web_push,
 *   notification.navigate, mutable) are read like the standard's directive they share.
 *
 * Notification click
 *   The actions 'approve' and 'deny' of an approval (payload.interrupt.kind 'approval') post
 *   the decision (POST /interrupts/<id>/decision with its token) and open nothing.
 *   The target is notification.data.url, else the declarative notification.navigate of
 *   data.payload, resolved against this origin (same-origin only); else '/#/interrupt/<id>' for
 *   an approval; else
 *   '/#/chat/<sessionId>' when data.payload carries a sessionId; else '/'. A window of this origin
 *   whose URL equals the target apart from the fragment is focused (exact match, then the focused
 *   one, then the first) and told NOTIFICATION_CLICKED so it can route; otherwise a window opens.
 *
 * Receipts
 *   A push carrying receiptToken (amsg stamps one per device) is reported to POST /receipts:
 *   'shown' once its notification is shown, 'clicked' {action} on notificationclick, 'dismissed' on
 *   notificationclose; batched, kept in IndexedDB while offline, flushed on the next push, sync
 *   ('amsg-flush-receipts') or activation. A push without a token reports nothing.
 *
 * App shell
 *   On install the same-origin paths listed by GET /app-shell.json are precached in
 *   'amsg-shell-<version>'; '/' must be among them for the offline fallback. Navigations are
 *   network-first with the cached page (or '/') as fallback, other same-origin GETs cache-first,
 *   /api/ is never touched. Activation deletes older 'amsg-shell-' caches only.
 *
 * Tests
 *   self.__amsgTest holds the rule functions (notification builders, show policies, dedupe key,
 *   multipart normaliser, click planning, subscription renewal), a dedupe record reader and
 *   counts of settled pushes and of notifications shown. Only DevTools attached to this worker
 *   can reach it: pages cannot, so it is harmless in production. Tests must read notifications
 *   only after the push that shows one has settled: Chromium's getNotifications() drops a
 *   notification it catches between being stored and being displayed.
 */
'use strict';

// Replaced by the Go handler with a hash of the web assets: a new build yields a
// byte-different worker, which makes browsers install it and rotate the shell cache.
const SW_VERSION = "__AMSG_SW_VERSION__";

const REI_SW_EVENT = Object.freeze({
  CONTENT_RECEIVED: 'rei-amsg-content-received',
  REASONING_RECEIVED: 'rei-amsg-reasoning-received',
  TOOL_REQUEST_RECEIVED: 'rei-amsg-tool-request-received',
  ERROR_RECEIVED: 'rei-amsg-error-received',
  RESULT_RECEIVED: 'rei-amsg-result-received',
  MULTIPART_EXPIRED: 'rei-amsg-multipart-expired',
  UNKNOWN_RECEIVED: 'rei-amsg-unknown-received',
});

// The notification texts amsg writes itself, by language and key: the Go
// package push/notifytext's tables, stamped in by the Go handler ("%s" takes
// the argument). notifyText picks the browser's language.
const NOTIFY_TEXTS = "__AMSG_NOTIFY_TEXTS__";

const DEFAULT_ICON = '/icon-192x192.png';
const DEFAULT_BADGE = '/badge-72x72.png';
const DEFAULT_TITLE = notifyText('defaultTitle');
const DEFAULT_BODY = notifyText('defaultBody');

const DEDUPE_TTL_MS = 10 * 60 * 1000;
const DEDUPE_SWEEP_INTERVAL_MS = 60 * 1000;

const MULTIPART_KIND = '_multipart';
const MULTIPART_VERSION = 1;
const MULTIPART_ENCODING = 'json-utf8-base64url';
// A chunk's lifetime is the sender's ttlMs (amsg sends the push's own TTL:
// 60 s for instant replies, up to four weeks for scheduled pushes, so chunks
// held by the push service for an offline phone still reassemble), or
// MULTIPART_TTL_MS when it names none, capped at the four weeks a push
// service holds a message at most. amsg-sw caps it at 60 s instead.
const MULTIPART_TTL_MS = 60 * 1000;
const MULTIPART_MAX_TTL_MS = 28 * 24 * 60 * 60 * 1000;
const MULTIPART_MAX_TOTAL_BYTES = 256000;
const MULTIPART_MAX_CHUNKS = 128;
const MULTIPART_SWEEP_INTERVAL_MS = 15 * 60 * 1000;

const QUEUE_SYNC_TAG = 'rei-sw-flush-request-outbox';

// Tags of the quiet notifications: a session's status (tool request, error,
// reasoning; the builders' SessionTagPrefix) and a multipart message still
// arriving. The session's reply, or the completed message, closes them.
const SESSION_TAG_PREFIX = 'amsg-session-';
const RECEIVING_TAG_PREFIX = 'amsg-receiving-';

// A _truncated summary is completed from GET /outbox: at most this many
// pages of OUTBOX_PAGE entries after the cursor the worker keeps.
const OUTBOX_PAGE = 100;
const OUTBOX_MAX_PAGES = 5;

const SHELL_CACHE_PREFIX = 'amsg-shell-';
const SHELL_CACHE = SHELL_CACHE_PREFIX + SW_VERSION;
const SHELL_LIST_URL = '/app-shell.json';

const LOG = '[amsg-sw]';

// Notifications this worker instance showed: the signal tests read to see
// that a push showed something (see self.__amsgTest).
let notificationsShown = 0;

// Chromium's getNotifications() deletes the notifications it finds stored
// but not yet displayed: a push listing notifications (closeTagged) while
// another push's showNotification was under way lost that one, shown but
// gone from getNotifications() and from its clicks. Pushes that arrive
// together (a quiet-hours release) did that, so the worker's notification
// calls run one at a time, each once the one before settled.
let notificationCalls = Promise.resolve();

function oneNotificationCall(call) {
  const result = notificationCalls.then(call);
  notificationCalls = result.catch(() => {});
  return result;
}

async function showNotification(title, options) {
  // A path that did not resolve silent:'when-visible' reads the windows now.
  if (options.silent === SILENT_WHEN_VISIBLE) options = resolveSilent(options, await windowClients());
  await oneNotificationCall(() => self.registration.showNotification(title, options));
  notificationsShown += 1;
}

/** registration.getNotifications, after the notification calls under way. */
function getNotifications(filter) {
  return oneNotificationCall(() => self.registration.getNotifications(filter));
}

// ---------------------------------------------------------------------------
// Rules: plain functions without I/O, exposed to tests through self.__amsgTest.

function isObject(value) {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function nonBlankString(value) {
  return typeof value === 'string' && value.trim() !== '';
}

/**
 * The text of key in this browser's language (the primary subtag of
 * navigator.language, as push/notifytext's Language reads a device's tag),
 * else in English; arg fills its %s.
 */
function notifyText(key, arg) {
  const tables = isObject(NOTIFY_TEXTS) ? NOTIFY_TEXTS : {};
  const primary = String((self.navigator && self.navigator.language) || '').split(/[-_]/)[0].toLowerCase();
  const text = (isObject(tables[primary]) && tables[primary][key]) || (isObject(tables.en) && tables.en[key]) || '';
  return arg === undefined ? text : text.replace('%s', () => arg);
}

/**
 * A title amsg wrote ("From <contactName>" in any language of the table, as
 * in a payload the page bridged from its stream, which the server did not
 * localize for this device) in this browser's language; any other title,
 * a producer's, as it is.
 */
function inBrowserLanguage(title, contactName) {
  if (!nonBlankString(title) || !nonBlankString(contactName) || !isObject(NOTIFY_TEXTS)) return title;
  const ours = Object.values(NOTIFY_TEXTS).some((table) => isObject(table) && typeof table.fromContact === 'string' &&
    title === table.fromContact.replace('%s', () => contactName));
  return ours ? notifyText('fromContact', contactName) : title;
}

/** The postMessage event name for a payload, by messageKind. */
function eventNameFor(payload) {
  switch (isObject(payload) ? payload.messageKind : undefined) {
    case 'content': return REI_SW_EVENT.CONTENT_RECEIVED;
    case 'reasoning': return REI_SW_EVENT.REASONING_RECEIVED;
    case 'tool_request': return REI_SW_EVENT.TOOL_REQUEST_RECEIVED;
    case 'error': return REI_SW_EVENT.ERROR_RECEIVED;
    case 'result': return REI_SW_EVENT.RESULT_RECEIVED;
    default: return REI_SW_EVENT.UNKNOWN_RECEIVED;
  }
}

/**
 * Whether a payload gets a system notification, given the window clients
 * (anything with a visibilityState). notification.show decides; without a
 * directive only content and legacy kind-less payloads notify.
 */
function shouldRender(payload, windowClients) {
  if (!isObject(payload)) return false;
  const show = isObject(payload.notification) ? payload.notification.show : undefined;
  if (show === 'always') return true;
  if (show === 'when-hidden') return !windowClients.some((c) => c.visibilityState === 'visible');
  if (show === false) return false;
  return payload.messageKind == null || isContentLike(payload.messageKind);
}

/** Kinds shown like content: content, and upstream's result (emitResult). */
function isContentLike(kind) {
  return kind === 'content' || kind === 'result';
}

const SILENT_WHEN_VISIBLE = 'when-visible';

/**
 * notification.silent as the producer gave it: 'when-visible' is kept for
 * resolveSilent, anything else becomes a boolean.
 */
function silentOption(value) {
  return value === SILENT_WHEN_VISIBLE ? value : Boolean(value ?? false);
}

/**
 * Resolves silent:'when-visible' against one reading of the windows, the one
 * show was judged by: silent while a window is visible, ringing otherwise.
 */
function resolveSilent(options, windowClients) {
  if (options.silent !== SILENT_WHEN_VISIBLE) return options;
  return { ...options, silent: windowClients.some((c) => c.visibilityState === 'visible') };
}

/**
 * The showNotification arguments for a payload: notification.X, then the
 * top-level field, then a default, exactly as amsg-sw resolves them. A blank
 * body becomes 'New message' so a banner is never empty.
 */
function buildNotification(payload, now = Date.now()) {
  if (!isObject(payload)) {
    return {
      title: DEFAULT_TITLE,
      options: {
        body: bodyOrDefault(String(payload)),
        icon: DEFAULT_ICON,
        badge: DEFAULT_BADGE,
        data: { payload },
        renotify: false,
        requireInteraction: false,
        silent: false,
      },
    };
  }
  const n = isObject(payload.notification) ? payload.notification : {};
  const data = isObject(n.data) ? { ...n.data } : isObject(payload.data) ? { ...payload.data } : {};
  if (data.payload == null) data.payload = payload;
  return {
    title: inBrowserLanguage(n.title || payload.title, payload.contactName) ||
      (payload.contactName ? notifyText('fromContact', payload.contactName) : '') || DEFAULT_TITLE,
    options: {
      body: bodyOrDefault(n.body || payload.body || payload.message || ''),
      icon: n.icon || payload.icon || payload.avatarUrl || DEFAULT_ICON,
      badge: n.badge || payload.badge || DEFAULT_BADGE,
      // A tag always exists, which keeps renotify:true legal.
      tag: n.tag || payload.tag || payload.messageId || `rei-${now}`,
      data,
      renotify: Boolean(n.renotify ?? payload.renotify ?? false),
      requireInteraction: Boolean(n.requireInteraction ?? payload.requireInteraction ?? false),
      silent: silentOption(n.silent ?? payload.silent),
    },
  };
}

function bodyOrDefault(body) {
  return nonBlankString(body) ? body : DEFAULT_BODY;
}

/** The tag of a session's quiet notifications, or undefined without a sessionId. */
function sessionTagOf(payload) {
  return isObject(payload) && nonBlankString(payload.sessionId) ? SESSION_TAG_PREFIX + payload.sessionId : undefined;
}

/**
 * How a push that came by Web Push is shown: 'full' (buildNotification) when
 * the rules above say so, else 'quiet' (buildFallbackNotification) for a tool
 * request or an error without a display policy of its own whatever the
 * page's state, and for anything else while no window is visible, since iOS
 * revokes subscriptions whose pushes show nothing; null only while a window
 * is visible, where Chrome and Firefox waive the rule. apple says this
 * worker's subscription is Apple's (see subscribedToApple): iOS waives
 * nothing, so every push there shows, quietly when the rules above would
 * show nothing.
 */
function webPushDisplay(payload, windowClients, apple = false) {
  if (shouldRender(payload, windowClients)) return 'full';
  if (apple || !windowClients.some((c) => c.visibilityState === 'visible')) return 'quiet';
  // A visible window: a tool request or an error still shows, quietly,
  // unless its producer named a display policy.
  const kind = isObject(payload) ? payload.messageKind : undefined;
  return (kind === 'tool_request' || kind === 'error') && !SHOW_POLICIES.includes(namedShow(payload)) ? 'quiet' : null;
}

const SHOW_POLICIES = Object.freeze(['auto', 'always', 'when-hidden', false]);

/**
 * A low-noise notification for a push of another kind than content that
 * would otherwise show nothing: silent, under the session's tag so the reply
 * replaces it, with a text that says what is going on. The payload's own
 * notification members win.
 */
function buildQuietNotification(payload, now = Date.now()) {
  const { title, options } = buildNotification(payload, now);
  const n = isObject(payload) && isObject(payload.notification) ? payload.notification : {};
  const kind = isObject(payload) ? payload.messageKind : undefined;
  const who = isObject(payload) && nonBlankString(payload.contactName) ? payload.contactName : notifyText('companion');
  let body = options.body;
  let quietTitle = title;
  if (!n.body) {
    if (kind === 'tool_request') body = notifyText('toolRequestBody', who);
    else if (kind === 'reasoning') body = notifyText('thinking', who);
    else if (kind === 'error') body = bodyOrDefault(payload.message || payload.code);
  }
  if (!n.title && kind === 'error') quietTitle = notifyText('replyInterrupted');
  return {
    title: quietTitle,
    options: { ...options, body, silent: true, tag: n.tag || sessionTagOf(payload) || options.tag },
  };
}

/** The quiet notification of a multipart message whose chunks are still arriving. */
function buildReceivingNotification(chunk) {
  return {
    title: DEFAULT_TITLE,
    options: {
      body: notifyText('receiving'),
      icon: DEFAULT_ICON,
      badge: DEFAULT_BADGE,
      tag: nonBlankString(chunk.id) ? RECEIVING_TAG_PREFIX + chunk.id : undefined,
      data: {},
      silent: true,
    },
  };
}

/** The dedupe key: the first non-blank of messageId, id, dedupeKey, trimmed. */
function dedupeKeyOf(payload) {
  if (!isObject(payload)) return undefined;
  for (const field of ['messageId', 'id', 'dedupeKey']) {
    if (nonBlankString(payload[field])) return payload[field].trim();
  }
  return undefined;
}

/** Whether a payload has the shape of a multipart chunk (else it is an ordinary payload). */
function isMultipartChunk(payload) {
  return isObject(payload) && payload.messageKind === MULTIPART_KIND &&
    payload.multipart !== null && typeof payload.multipart === 'object' &&
    typeof payload.chunk === 'string';
}

/**
 * Validates a multipart chunk and computes its lifetime; null means drop it.
 * The TTL is the sender's, capped at MULTIPART_MAX_TTL_MS; expiry uses the
 * sender's createdAt.
 */
function normalizeMultipartChunk(payload, now = Date.now()) {
  if (!isMultipartChunk(payload)) return null;
  const m = payload.multipart;
  if (m.version !== MULTIPART_VERSION || m.encoding !== MULTIPART_ENCODING) return null;
  if (!nonBlankString(m.id)) return null;
  if (!Number.isInteger(m.total) || m.total <= 0 || m.total > MULTIPART_MAX_CHUNKS) return null;
  if (!Number.isInteger(m.index) || m.index < 1 || m.index > m.total) return null;
  const bytes = base64UrlToBytes(payload.chunk);
  if (bytes === null) return null;
  const ttlMs = Math.min(Number.isInteger(m.ttlMs) && m.ttlMs > 0 ? m.ttlMs : MULTIPART_TTL_MS, MULTIPART_MAX_TTL_MS);
  const createdAt = Number.isFinite(m.createdAt) ? m.createdAt : now;
  return {
    id: m.id,
    index: m.index,
    total: m.total,
    encoding: m.encoding,
    originalMessageKind: typeof m.originalMessageKind === 'string' ? m.originalMessageKind : null,
    createdAt,
    ttlMs,
    expiresAt: createdAt + ttlMs,
    chunk: payload.chunk,
    byteLength: bytes.length,
  };
}

/** Decodes base64url (padding optional); null when it is not base64url. */
function base64UrlToBytes(text) {
  if (typeof text !== 'string' || !/^[A-Za-z0-9_-]*={0,2}$/.test(text)) return null;
  const bare = text.replace(/=+$/, '');
  if (bare.length % 4 === 1) return null;
  const b64 = bare.replace(/-/g, '+').replace(/_/g, '/') + '==='.slice((bare.length + 3) % 4);
  let binary;
  try {
    binary = atob(b64);
  } catch {
    return null;
  }
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

function bytesToBase64(bytes) {
  let binary = '';
  for (let i = 0; i < bytes.length; i++) binary += String.fromCharCode(bytes[i]);
  return btoa(binary);
}

/**
 * Normalises a page's REI_ENQUEUE_REQUEST request as amsg-sw does: method
 * upper-cased (default POST), header names lower-cased, object bodies sent as
 * JSON, no body on GET/HEAD. Throws on a missing url or an unserialisable body.
 */
function normalizeQueuedRequest(request) {
  if (!isObject(request)) throw new TypeError('request must be an object');
  const url = typeof request.url === 'string' ? request.url.trim() : '';
  if (!url) throw new TypeError('request.url is required');
  const method = nonBlankString(request.method) ? request.method.trim().toUpperCase() : 'POST';
  const headers = {};
  if (isObject(request.headers)) {
    for (const [name, value] of Object.entries(request.headers)) {
      if (value != null) headers[name.toLowerCase()] = String(value);
    }
  }
  let body;
  if (method === 'GET' || method === 'HEAD') {
    body = undefined;
  } else if (request.body == null) {
    body = '';
  } else if (typeof request.body === 'string') {
    body = request.body;
  } else {
    body = JSON.stringify(request.body);
    if (body === undefined) throw new TypeError('request.body cannot be serialized');
    if (!('content-type' in headers)) headers['content-type'] = 'application/json';
  }
  return { url, method, headers, body };
}

/** Where a click on a notification with this data leads (see the header comment). */
function clickTargetURL(data, origin) {
  const payload = isObject(data) ? data.payload : undefined;
  // data.url, then a declarative message's notification.navigate.
  const declared = isObject(payload) && isObject(payload.notification) ? payload.notification.navigate : undefined;
  for (const candidate of [isObject(data) ? data.url : undefined, declared]) {
    if (!nonBlankString(candidate)) continue;
    try {
      const url = new URL(candidate.trim(), origin);
      // Only our own pages: a push must not be able to send the user elsewhere.
      if (url.origin === origin) return url.href;
    } catch {
      // An unparsable url falls through to the next rule.
    }
  }
  const approval = approvalOf(payload);
  if (approval) return new URL(`/#/interrupt/${encodeURIComponent(approval.id)}`, origin).href;
  if (isObject(payload) && nonBlankString(payload.sessionId)) {
    return new URL(`/#/chat/${encodeURIComponent(payload.sessionId.trim())}`, origin).href;
  }
  return new URL('/', origin).href;
}

/**
 * The window (anything with url and focused) a click on targetURL should
 * focus: same URL apart from the fragment, preferring the exact URL, then
 * the focused window. undefined means open a new one.
 */
function pickClientForURL(windowClients, targetURL) {
  const withoutHash = (href) => href.split('#')[0];
  const candidates = windowClients.filter((c) => withoutHash(c.url) === withoutHash(targetURL));
  return candidates.find((c) => c.url === targetURL) || candidates.find((c) => c.focused) || candidates[0];
}

// ---------------------------------------------------------------------------
// IndexedDB with cached connections. A connection the browser force-closes
// (storage pressure, clearing site data) only fires `close`; the handle is then
// evicted and every transaction retries once on a fresh one.

const DEDUPE_DB = {
  name: 'rei_amsg_sw_dedupe_v1',
  version: 1,
  upgrade(db) {
    if (!db.objectStoreNames.contains('delivery-dedupe')) {
      db.createObjectStore('delivery-dedupe', { keyPath: 'key' }).createIndex('expiresAt', 'expiresAt');
    }
  },
};

const REI_DB = {
  name: 'rei-sw',
  version: 3,
  upgrade(db) {
    const names = db.objectStoreNames;
    if (!names.contains('request-outbox')) db.createObjectStore('request-outbox', { keyPath: 'id', autoIncrement: true });
    if (!names.contains('multipart-pending')) db.createObjectStore('multipart-pending', { keyPath: 'id' }).createIndex('expiresAt', 'expiresAt');
    if (!names.contains('multipart-chunk')) db.createObjectStore('multipart-chunk', { keyPath: 'id_index' });
    if (!names.contains('multipart-done')) db.createObjectStore('multipart-done', { keyPath: 'id' }).createIndex('expiresAt', 'expiresAt');
  },
};

const APP_DB = {
  name: 'amsg-app',
  version: 1,
  upgrade(db) {
    if (!db.objectStoreNames.contains('config')) db.createObjectStore('config');
  },
};

const connections = new Map(); // database name → Promise<IDBDatabase>

function openDatabase(spec) {
  let opening = connections.get(spec.name);
  if (opening) return opening;
  opening = new Promise((resolve, reject) => {
    const request = indexedDB.open(spec.name, spec.version);
    request.onupgradeneeded = () => spec.upgrade(request.result);
    request.onerror = () => reject(request.error);
    request.onsuccess = () => {
      const db = request.result;
      db.onversionchange = () => {
        db.close();
        evictConnection(spec.name, opening);
      };
      db.onclose = () => evictConnection(spec.name, opening);
      resolve(db);
    };
  });
  connections.set(spec.name, opening);
  opening.catch(() => evictConnection(spec.name, opening));
  return opening;
}

function evictConnection(name, opening) {
  if (connections.get(name) === opening) connections.delete(name);
}

/**
 * Runs body(tx) in one transaction and resolves with its result once the
 * transaction commits. body may await IndexedDB requests only, so the
 * transaction stays active; a throw aborts it.
 */
async function transact(spec, storeNames, mode, body) {
  let tx;
  try {
    tx = await beginTransaction(spec, storeNames, mode);
  } catch {
    // Opening failed or the cached handle was closing: one try on a fresh connection.
    tx = await beginTransaction(spec, storeNames, mode);
  }
  return runTransaction(tx, body);
}

async function beginTransaction(spec, storeNames, mode) {
  const opening = openDatabase(spec);
  try {
    return (await opening).transaction(storeNames, mode);
  } catch (err) {
    evictConnection(spec.name, opening);
    throw err;
  }
}

function runTransaction(tx, body) {
  return new Promise((resolve, reject) => {
    let value;
    let bodyError;
    tx.oncomplete = () => resolve(value);
    tx.onabort = () => reject(bodyError || tx.error || new DOMException('transaction aborted', 'AbortError'));
    (async () => body(tx))().then(
      (result) => { value = result; },
      (err) => {
        bodyError = err;
        try { tx.abort(); } catch { /* already finished */ }
      },
    );
  });
}

function req(request) {
  return new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

/** store.add that reports a taken key as false instead of aborting the transaction. */
function addIfAbsent(store, value) {
  return new Promise((resolve, reject) => {
    const request = store.add(value);
    request.onsuccess = () => resolve(true);
    request.onerror = (event) => {
      if (request.error && request.error.name === 'ConstraintError') {
        event.preventDefault();
        event.stopPropagation();
        resolve(false);
      } else {
        reject(request.error);
      }
    };
  });
}

async function deleteExpired(store, now, onRecord) {
  let cursor = await req(store.index('expiresAt').openCursor(IDBKeyRange.upperBound(now)));
  while (cursor) {
    if (onRecord) await onRecord(cursor.value);
    cursor.delete();
    cursor.continue();
    cursor = await req(cursor.request);
  }
}

// ---------------------------------------------------------------------------
// Dedupe: the first delivery of a key claims it atomically; later ones within
// ten minutes are duplicates that may only repair a missing notification.

const DEDUPE_STORE = 'delivery-dedupe';
let lastDedupeSweep = 0;

function claimDelivery(key, record) {
  return transact(DEDUPE_DB, [DEDUPE_STORE], 'readwrite', async (tx) => {
    const store = tx.objectStore(DEDUPE_STORE);
    if (await addIfAbsent(store, record)) return { duplicate: false };
    const existing = await req(store.get(key));
    if (existing && existing.expiresAt > record.firstSeenAt) return { duplicate: true, existing };
    // The old claim expired: the key renews. One transaction keeps this atomic.
    await req(store.put(record));
    return { duplicate: false };
  });
}

/** Merges patch onto the stored record, only if it is still the claim firstSeenAt made (when given). */
function updateDelivery(key, patch, firstSeenAt) {
  return transact(DEDUPE_DB, [DEDUPE_STORE], 'readwrite', async (tx) => {
    const store = tx.objectStore(DEDUPE_STORE);
    const current = await req(store.get(key));
    if (!current || (firstSeenAt !== undefined && current.firstSeenAt !== firstSeenAt)) return;
    await req(store.put({ ...current, ...patch }));
  });
}

function maybeSweepDedupe(now) {
  if (now - lastDedupeSweep < DEDUPE_SWEEP_INTERVAL_MS) return Promise.resolve();
  lastDedupeSweep = now;
  return transact(DEDUPE_DB, [DEDUPE_STORE], 'readwrite', (tx) => deleteExpired(tx.objectStore(DEDUPE_STORE), now))
    .catch((err) => console.warn(LOG, 'dedupe cleanup failed', err));
}

// ---------------------------------------------------------------------------
// Multipart: chunks are kept in IndexedDB until the set is complete. One
// transaction over the three stores per chunk makes each step atomic, so
// concurrent chunks of one set cannot lose updates.

const MP_PENDING = 'multipart-pending';
const MP_CHUNK = 'multipart-chunk';
const MP_DONE = 'multipart-done';
let lastMultipartSweep = 0;

function expiredNotice(id, received, total, originalMessageKind, reason) {
  return { id, received, total, originalMessageKind, reason };
}

async function deleteChunks(chunkStore, id, total) {
  for (let index = 1; index <= total; index++) await req(chunkStore.delete(`${id}_${index}`));
}

/**
 * Stores one normalised chunk. Resolves {restored?, expired[]}: the original
 * payload when this chunk completed its set, and expiry notices to broadcast.
 */
function acceptChunk(chunk, now) {
  return transact(REI_DB, [MP_PENDING, MP_CHUNK, MP_DONE], 'readwrite', async (tx) => {
    const pendingStore = tx.objectStore(MP_PENDING);
    const chunkStore = tx.objectStore(MP_CHUNK);
    const doneStore = tx.objectStore(MP_DONE);
    const expired = [];
    const { id } = chunk;
    // Forgets the set so far: its pending record and the chunks it stored.
    const dropSet = async (total) => {
      await req(pendingStore.delete(id));
      await deleteChunks(chunkStore, id, total);
    };

    if (chunk.expiresAt <= now) {
      expired.push(expiredNotice(id, 0, chunk.total, chunk.originalMessageKind, 'ttl-expired'));
      return { expired };
    }
    const done = await req(doneStore.get(id));
    if (done) {
      // A redelivered chunk of a finished set must not restore it twice.
      if (done.expiresAt > now) return { expired };
      await req(doneStore.delete(id));
    }
    let pending = await req(pendingStore.get(id));
    if (pending && pending.expiresAt <= now) {
      expired.push(expiredNotice(id, pending.receivedCount, pending.total, pending.originalMessageKind, 'ttl-expired'));
      await dropSet(pending.total);
      pending = undefined;
    }
    if (pending && (pending.total !== chunk.total || pending.encoding !== chunk.encoding)) {
      expired.push(expiredNotice(id, pending.receivedCount, pending.total, pending.originalMessageKind, 'chunk-conflict'));
      await dropSet(pending.total);
      return { expired };
    }
    const chunkKey = `${id}_${chunk.index}`;
    if (await req(chunkStore.count(chunkKey))) return { expired };

    pending = pending || {
      id,
      createdAt: chunk.createdAt,
      expiresAt: chunk.expiresAt,
      ttlMs: chunk.ttlMs,
      total: chunk.total,
      originalMessageKind: chunk.originalMessageKind,
      encoding: chunk.encoding,
      receivedCount: 0,
      receivedBytes: 0,
    };
    pending.receivedCount += 1;
    pending.receivedBytes += chunk.byteLength;
    if (pending.receivedBytes > MULTIPART_MAX_TOTAL_BYTES) {
      expired.push(expiredNotice(id, pending.receivedCount, pending.total, pending.originalMessageKind, 'size-limit-exceeded'));
      await dropSet(pending.total);
      return { expired };
    }
    await req(chunkStore.put({ id_index: chunkKey, id, index: chunk.index, chunk: chunk.chunk }));
    if (pending.receivedCount < pending.total) {
      await req(pendingStore.put(pending));
      return { expired };
    }

    await req(pendingStore.delete(id));
    const parts = [];
    for (let index = 1; index <= pending.total; index++) {
      const stored = await req(chunkStore.get(`${id}_${index}`));
      parts.push(stored ? base64UrlToBytes(stored.chunk) : null);
    }
    await deleteChunks(chunkStore, id, pending.total);
    const restored = restoreMultipart(parts);
    if (restored === undefined) {
      expired.push(expiredNotice(id, pending.receivedCount, pending.total, pending.originalMessageKind, 'restore-failed'));
      return { expired };
    }
    const ttl = pending.ttlMs;
    await req(doneStore.put({ id, expiresAt: now + Math.max(2 * ttl, ttl + 1) }));
    return { expired, restored };
  });
}

/** Concatenates the chunk bytes in order and parses the JSON; undefined when that fails. */
function restoreMultipart(parts) {
  if (parts.some((p) => p === null)) return undefined;
  const size = parts.reduce((sum, p) => sum + p.length, 0);
  if (size > MULTIPART_MAX_TOTAL_BYTES) return undefined;
  const all = new Uint8Array(size);
  let offset = 0;
  for (const p of parts) {
    all.set(p, offset);
    offset += p.length;
  }
  try {
    return JSON.parse(new TextDecoder('utf-8', { fatal: false }).decode(all));
  } catch {
    return undefined;
  }
}

async function maybeSweepMultipart(now) {
  if (now - lastMultipartSweep < MULTIPART_SWEEP_INTERVAL_MS) return;
  lastMultipartSweep = now;
  try {
    const expired = await transact(REI_DB, [MP_PENDING, MP_CHUNK, MP_DONE], 'readwrite', async (tx) => {
      const notices = [];
      const chunkStore = tx.objectStore(MP_CHUNK);
      await deleteExpired(tx.objectStore(MP_PENDING), now, async (pending) => {
        notices.push(expiredNotice(pending.id, pending.receivedCount, pending.total, pending.originalMessageKind, 'ttl-expired'));
        await deleteChunks(chunkStore, pending.id, pending.total);
      });
      await deleteExpired(tx.objectStore(MP_DONE), now);
      return notices;
    });
    await broadcastExpired(expired);
  } catch (err) {
    console.warn(LOG, 'multipart cleanup failed', err);
  }
}

/** The notice for a chunk normalizeMultipartChunk refused, when it names its message. */
function invalidChunkNotices(payload) {
  const m = payload.multipart;
  if (!nonBlankString(m.id)) return [];
  const kind = typeof m.originalMessageKind === 'string' ? m.originalMessageKind : null;
  return [expiredNotice(m.id, 0, Number.isInteger(m.total) ? m.total : null, kind, 'invalid-chunk')];
}

/** acceptChunk, reporting a chunk the store failed to keep as storage-failed. */
async function acceptChunkReporting(chunk, now) {
  try {
    return await acceptChunk(chunk, now);
  } catch (err) {
    console.warn(LOG, 'multipart storage failed', err);
    return { expired: [expiredNotice(chunk.id, 0, chunk.total, chunk.originalMessageKind, 'storage-failed')] };
  }
}

async function broadcastExpired(notices) {
  if (!notices.length) return;
  const windows = await windowClients();
  for (const notice of notices) broadcast(windows, { type: 'REI_AMSG_PUSH', event: REI_SW_EVENT.MULTIPART_EXPIRED, payload: notice });
}

// ---------------------------------------------------------------------------
// The delivery pipeline, shared by Web Push and REI_AMSG_DELIVER.

async function windowClients() {
  try {
    return await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
  } catch {
    return [];
  }
}

function broadcast(windows, message) {
  for (const client of windows) {
    try {
      client.postMessage(message);
    } catch {
      // One broken client must not keep the message from the others.
    }
  }
}

/**
 * Runs one payload through multipart, dedupe and dispatch. source is
 * 'webpush' or the page's delivery source; apple says a Web Push came to an
 * Apple subscription (webPushDisplay). Resolves {duplicate, key}.
 */
async function processPayload(payload, source, apple = false) {
  const now = Date.now();
  await maybeSweepMultipart(now);

  if (isMultipartChunk(payload)) {
    const chunk = normalizeMultipartChunk(payload, now);
    if (!chunk) {
      await broadcastExpired(invalidChunkNotices(payload));
      return { duplicate: false, key: undefined, shown: false, payload };
    }
    const { restored, expired } = await acceptChunkReporting(chunk, now);
    await broadcastExpired(expired);
    if (restored === undefined) return { duplicate: false, key: undefined, shown: false, payload };
    const result = await processPayload(restored, source, apple);
    await closeTagged(RECEIVING_TAG_PREFIX + chunk.id);
    return result;
  }

  const key = dedupeKeyOf(payload);
  let firstSeenAt;
  let dedupeError;
  if (key !== undefined) {
    await maybeSweepDedupe(now);
    const record = {
      key,
      firstSeenAt: now,
      expiresAt: now + DEDUPE_TTL_MS,
      source,
      messageKind: typeof payload.messageKind === 'string' ? payload.messageKind : null,
      show: namedShow(payload),
      notificationShown: false,
      notificationStatePending: true,
    };
    let claim;
    try {
      claim = await claimDelivery(key, record);
    } catch (err) {
      // Without the dedupe store a duplicate is better than a lost message.
      console.warn(LOG, 'dedupe unavailable, delivering without it', err);
      dedupeError = errorMessage(err);
      claim = { duplicate: false, unrecorded: true };
    }
    if (claim.duplicate) {
      const repaired = await repairNotification(payload, key, claim.existing);
      return { duplicate: true, key, shown: repaired, payload };
    }
    if (!claim.unrecorded) firstSeenAt = now;
  }

  const windows = await windowClients();
  const display = source === 'webpush' ? webPushDisplay(payload, windows, apple) : shouldRender(payload, windows) ? 'full' : null;
  broadcast(windows, { type: 'REI_AMSG_PUSH', event: eventNameFor(payload), payload });
  let shown = false;
  if (display) {
    const { title, options } = display === 'full' ? buildNotification(payload, now) : buildFallbackNotification(payload, now);
    try {
      await showNotification(title, withApprovalActions(payload, resolveSilent(options, windows)));
      shown = true;
    } catch (err) {
      console.error(LOG, 'showNotification failed', err);
    }
  }
  // The reply is here: the session's status notification (a tool request,
  // thinking) has had its day, unless the reply itself is shown under its tag.
  if (isObject(payload) && payload.messageKind === 'content') {
    const tag = sessionTagOf(payload);
    if (tag && !(shown && buildNotification(payload, now).options.tag === tag)) await closeTagged(tag);
  }
  // Settle the pending flag whatever happened, so a backup push can repair a
  // notification that failed to show.
  if (firstSeenAt !== undefined) {
    await updateDelivery(key, { notificationShown: shown, notificationStatePending: false }, firstSeenAt)
      .catch((err) => console.warn(LOG, 'dedupe state update failed', err));
  }
  return { duplicate: false, key, shown, payload, dedupeError };
}

/** Closes the notifications shown under tag. */
async function closeTagged(tag) {
  try {
    for (const notification of await getNotifications({ tag })) notification.close();
  } catch (err) {
    console.warn(LOG, 'could not close notifications', err);
  }
}

/**
 * The notification of last resort for a Web Push that showed nothing while
 * no window is visible (a chunk of an unfinished message, a duplicate, a
 * payload the pipeline dropped): a quiet one, since iOS counts every push
 * that shows nothing against the subscription. Content is shown again under
 * its own tag, replacing its earlier copy.
 */
function buildFallbackNotification(payload, now = Date.now()) {
  if (isMultipartChunk(payload)) return buildReceivingNotification(payload.multipart);
  if (isObject(payload) && payload.messageKind != null && !isContentLike(payload.messageKind)) return buildQuietNotification(payload, now);
  const { title, options } = buildNotification(payload, now);
  return { title, options: { ...options, silent: true } };
}

/**
 * Shows the notification of last resort for a Web Push that showed none.
 * While a window is visible only an Apple subscription needs one: upstream's
 * field notes (changeset amsg-notification-ios-grace-period, @80f471d) found
 * that iOS, unlike Chrome, does not waive the rule for a visible window and,
 * after a grace period of a few days, revokes a subscription for one push
 * that showed nothing (agegr/pi-web #728 saw the same in production). The
 * page shows the message itself then, so the notification goes under the
 * session's tag, where the session's next one replaces it.
 */
async function ensureShown(payload, apple) {
  const windows = await windowClients();
  const visible = windows.some((c) => c.visibilityState === 'visible');
  if (visible && !apple) return;
  const { title, options } = buildFallbackNotification(payload);
  if (visible) options.tag = sessionTagOf(payload) || options.tag;
  await showNotification(title, options);
}

/** Whether host is Apple's push service (web.push.apple.com and its siblings). */
function isApplePushHost(host) {
  const h = String(host).toLowerCase().replace(/\.$/, '');
  return h === 'push.apple.com' || h.endsWith('.push.apple.com');
}

/**
 * Whether this worker's own push subscription is Apple's, read from the
 * registration at each push (a pushsubscriptionchange may move it).
 */
async function subscribedToApple() {
  try {
    const subscription = await self.registration.pushManager.getSubscription();
    return Boolean(subscription) && isApplePushHost(new URL(subscription.endpoint).hostname);
  } catch (err) {
    console.warn(LOG, 'could not read the push subscription', err);
    return false;
  }
}

/**
 * A push from Web Push: the pipeline, then a notification if it showed
 * none (see ensureShown), then the report that this device is alive and
 * the completion of a truncated message, which both need the client config.
 */
async function handleWebPush(payload) {
  const apple = await subscribedToApple();
  let result;
  try {
    result = await processPayload(payload, 'webpush', apple);
  } catch (err) {
    console.error(LOG, 'push handling failed', err);
    result = { duplicate: false, shown: false, payload };
  }
  if (!result.shown) await ensureShown(result.payload, apple).catch((err) => console.error(LOG, 'showNotification failed', err));
  const receipts = result.shown && !result.duplicate ? reportReceipt(result.payload, 'shown') : flushReceipts();
  await receipts.catch((err) => console.warn(LOG, 'could not report a push shown', err));
  let config = null;
  try {
    config = await readClientConfig();
  } catch (err) {
    console.warn(LOG, 'client config unavailable', err);
  }
  if (!validClientConfig(config)) return;
  await Promise.all([
    reportSeen(config).catch((err) => console.warn(LOG, 'could not report this device as seen', err)),
    result.duplicate ? null : completeTruncated(config, result.payload).catch((err) => console.warn(LOG, 'could not complete a truncated message', err)),
  ]);
}

/**
 * The display policy a payload names, or null. Recorded with the first
 * delivery of a message so its duplicates are judged by it.
 */
function namedShow(payload) {
  if (!isObject(payload) || !isObject(payload.notification)) return null;
  const show = payload.notification.show;
  return show === undefined ? null : show;
}

/**
 * A duplicate shows the notification the first delivery did not, if the
 * policy now says so. The policy is the first delivery's when it named one:
 * a page that bridged its stream copy with show:'when-hidden' keeps the Web
 * Push backup quiet while it is visible, and lets it notify once hidden.
 * (amsg-sw judges the duplicate's own payload, so the backup of a reply the
 * user is reading raises a notification.)
 */
async function repairNotification(payload, key, existing) {
  // Nothing to repair once shown; a first delivery still under way settles it.
  if (existing.notificationShown === true || existing.notificationStatePending === true) return false;
  const judged = existing.show != null && isObject(payload)
    ? { ...payload, notification: { ...(isObject(payload.notification) ? payload.notification : {}), show: existing.show } }
    : payload;
  if (!shouldRender(judged, await windowClients())) return false;
  const { title, options } = buildNotification(payload);
  await showNotification(title, options);
  await updateDelivery(key, { notificationShown: true, notificationStatePending: false });
  return true;
}

// ---------------------------------------------------------------------------
// Offline request queue (outbox): requests the page could not send, replayed
// in order. 2xx and 4xx (permanent) leave the queue; anything else waits for
// the next flush.

const OUTBOX = 'request-outbox';
let flushChain = Promise.resolve();

function enqueueRequest(request) {
  const entry = { ...normalizeQueuedRequest(request), createdAt: Date.now() };
  return transact(REI_DB, [OUTBOX], 'readwrite', (tx) => req(tx.objectStore(OUTBOX).add(entry)));
}

/** Flushes the queue; calls run one after another so no request is sent twice. */
function flushQueue() {
  flushChain = flushChain.then(flushQueueOnce, flushQueueOnce);
  return flushChain;
}

async function flushQueueOnce() {
  try {
    const entries = await transact(REI_DB, [OUTBOX], 'readonly', (tx) => req(tx.objectStore(OUTBOX).getAll()));
    entries.sort((a, b) => a.createdAt - b.createdAt || a.id - b.id);
    for (const entry of entries) {
      let status = 0;
      try {
        const response = await fetch(entry.url, { method: entry.method, headers: entry.headers, body: entry.body });
        status = response.status;
      } catch {
        // Offline: status stays 0 and the entry waits.
      }
      const settled = (status >= 200 && status < 300) || (status >= 400 && status < 500);
      if (!settled) {
        await registerQueueSync();
        return;
      }
      await transact(REI_DB, [OUTBOX], 'readwrite', (tx) => req(tx.objectStore(OUTBOX).delete(entry.id)));
      await settleQueued(entry, status);
    }
  } catch (err) {
    console.warn(LOG, 'request queue flush failed', err);
  }
}

// What became of flushed entries, by queue id, until the enqueue waiting for
// one reads it (whichever flush sent it); bounded, since entries a sync
// event flushes have nobody waiting.
const queueOutcomes = new Map();
const QUEUE_OUTCOMES_MAX = 100;

/**
 * Records a settled entry's outcome; a 4xx drop is also told to every
 * window (without the request's headers or body) and logged.
 */
async function settleQueued(entry, status) {
  const outcome = status >= 400
    ? { delivered: false, dropped: true, status, error: `HTTP ${status}` }
    : { delivered: true, status };
  queueOutcomes.set(entry.id, outcome);
  if (queueOutcomes.size > QUEUE_OUTCOMES_MAX) queueOutcomes.delete(queueOutcomes.keys().next().value);
  if (!outcome.dropped) return;
  console.error(LOG, 'queued request dropped', entry.method, entry.url, status);
  broadcast(await windowClients(), {
    type: 'REI_QUEUE_RESULT', ok: false, queueId: entry.id, dropped: true, status, error: outcome.error,
    request: { url: entry.url, method: entry.method },
  });
}

/** The enqueue ack: ok (queued), whether the flush delivered it, and a drop. */
function queueAck(queueId) {
  const outcome = queueOutcomes.get(queueId);
  queueOutcomes.delete(queueId);
  const ack = { type: 'REI_QUEUE_RESULT', ok: true, queueId, delivered: Boolean(outcome && outcome.delivered) };
  if (outcome && outcome.dropped) Object.assign(ack, { dropped: true, status: outcome.status, error: outcome.error });
  return ack;
}

async function registerQueueSync() {
  try {
    if (self.registration.sync) await self.registration.sync.register(QUEUE_SYNC_TAG);
  } catch {
    // Background Sync is optional; the next page message flushes too.
  }
}

// ---------------------------------------------------------------------------
// Notification click.

/** What a click would do: {url, client} where client is the window to focus, or undefined to open one. */
async function planClick(data) {
  const url = clickTargetURL(data, self.location.origin);
  return { url, client: pickClientForURL(await windowClients(), url) };
}

async function openFromNotification(data) {
  const { url, client } = await planClick(data);
  if (client) {
    const focused = (await client.focus()) || client;
    focused.postMessage({ type: 'NOTIFICATION_CLICKED', url, data });
    return;
  }
  await self.clients.openWindow(url);
}

// ---------------------------------------------------------------------------
// pushsubscriptionchange: re-subscribe and register the new subscription with
// the server as amsg-client would, from the config the page stored.

function readClientConfig() {
  return readConfigValue('client');
}

function validClientConfig(config) {
  return isObject(config) && nonBlankString(config.apiBase) && nonBlankString(config.userId) &&
    typeof config.userKeyHex === 'string' && /^[0-9a-f]{64}$/i.test(config.userKeyHex);
}

/** AES-256-GCM envelope of amsg-client: {iv, authTag, encryptedData}, standard base64. */
async function encryptEnvelope(userKeyHex, value) {
  const raw = new Uint8Array(userKeyHex.match(/../g).map((h) => parseInt(h, 16)));
  const key = await crypto.subtle.importKey('raw', raw, 'AES-GCM', false, ['encrypt']);
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const plaintext = new TextEncoder().encode(JSON.stringify(value));
  const sealed = new Uint8Array(await crypto.subtle.encrypt({ name: 'AES-GCM', iv }, key, plaintext));
  return {
    iv: bytesToBase64(iv),
    authTag: bytesToBase64(sealed.slice(sealed.length - 16)),
    encryptedData: bytesToBase64(sealed.slice(0, sealed.length - 16)),
  };
}

/**
 * Gets a subscription (the event's new one, else a fresh one with the old
 * key or the stored VAPID key) and queues its encrypted PUT, so it reaches
 * the server even when this runs offline. Resolves the new subscription.
 */
async function renewSubscription(oldSubscription, newSubscription) {
  let config = null;
  try {
    config = await readClientConfig();
  } catch (err) {
    console.warn(LOG, 'client config unavailable', err);
  }
  let subscription = newSubscription;
  if (!subscription) {
    const oldKey = oldSubscription && oldSubscription.options ? oldSubscription.options.applicationServerKey : null;
    const applicationServerKey = oldKey || (isObject(config) ? base64UrlToBytes(config.vapidPublicKey) : null);
    if (!applicationServerKey) throw new Error('pushsubscriptionchange: no applicationServerKey to subscribe with');
    subscription = await self.registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey });
  }
  if (!validClientConfig(config)) {
    // The page registers the subscription itself on its next start.
    console.warn(LOG, 'pushsubscriptionchange: no client config; the page must register the new subscription');
    return subscription;
  }
  const body = { subscription: subscription.toJSON ? subscription.toJSON() : subscription, updatedAt: Date.now() };
  if (self.navigator.language) body.language = self.navigator.language; // the device's, as the page sends it
  const headers = {
    ...apiHeaders(config),
    'content-type': 'application/json',
    'x-payload-encrypted': 'true',
    'x-encryption-version': '1',
  };
  await enqueueRequest({ url: apiURL(config, 'push-subscription'), method: 'PUT', headers, body: JSON.stringify(await encryptEnvelope(config.userKeyHex, body)) });
  await flushQueue();
  return subscription;
}

/** The absolute URL of an API route under the config's apiBase. */
function apiURL(config, route) {
  return new URL(`${config.apiBase.replace(/\/+$/, '')}/${route}`, self.location.origin).href;
}

/** The headers that name the user (and carry the client token) on every API call. */
function apiHeaders(config) {
  const headers = { 'x-user-id': config.userId };
  if (nonBlankString(config.clientToken)) headers['x-client-token'] = config.clientToken;
  return headers;
}

/** Opens an AES-256-GCM envelope of the server ({iv, authTag, encryptedData}) as JSON. */
async function decryptEnvelope(userKeyHex, envelope) {
  const raw = new Uint8Array(userKeyHex.match(/../g).map((h) => parseInt(h, 16)));
  const key = await crypto.subtle.importKey('raw', raw, 'AES-GCM', false, ['decrypt']);
  const bytes = (b64) => Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  const iv = bytes(envelope.iv);
  const sealed = new Uint8Array([...bytes(envelope.encryptedData), ...bytes(envelope.authTag)]);
  const plaintext = await crypto.subtle.decrypt({ name: 'AES-GCM', iv }, key, sealed);
  return JSON.parse(new TextDecoder().decode(plaintext));
}

// ---------------------------------------------------------------------------
// Liveness and truncated messages, for pushes that came by Web Push.

/**
 * Tells the server this device is alive (POST /device-seen with its
 * endpoint): the server expires devices silent for too long, because Apple
 * keeps accepting pushes for subscriptions iOS revoked.
 */
async function reportSeen(config) {
  const subscription = await self.registration.pushManager.getSubscription();
  if (!subscription) return;
  await fetch(apiURL(config, 'device-seen'), {
    method: 'POST',
    headers: { ...apiHeaders(config), 'content-type': 'application/json' },
    body: JSON.stringify({ endpoint: subscription.endpoint }),
  });
}

/**
 * A summary push names the whole one in _truncated {messageId, bytes}: the
 * worker fetches it from GET /outbox, hands it to the open windows, and puts
 * it behind the summary's notification (data.payload), so a click opens the
 * whole text.
 */
async function completeTruncated(config, payload) {
  const truncated = isObject(payload) ? payload._truncated : undefined;
  if (!isObject(truncated) || !nonBlankString(truncated.messageId)) return;
  const full = await findInOutbox(config, truncated.messageId);
  if (!isObject(full)) return;
  broadcast(await windowClients(), { type: 'REI_AMSG_PUSH', event: eventNameFor(full), payload: full });
  const { title, options } = buildNotification(payload);
  if ((await getNotifications({ tag: options.tag })).length === 0) return; // dismissed meanwhile
  await showNotification(title, { ...options, silent: true, data: { ...options.data, payload: full } });
}

/**
 * Looks for messageId in the user's outbox, from the cursor the worker
 * keeps (a summary is always among the newest entries), OUTBOX_MAX_PAGES
 * pages at most. Resolves the push, or undefined.
 */
async function findInOutbox(config, messageId) {
  const cursorKey = `outboxCursor.${config.userId}`;
  let since = Number(await readConfigValue(cursorKey)) || 0;
  try {
    for (let page = 0; page < OUTBOX_MAX_PAGES; page++) {
      const url = new URL(apiURL(config, 'outbox'));
      url.searchParams.set('since', String(since));
      url.searchParams.set('limit', String(OUTBOX_PAGE));
      const response = await fetch(url.href, { headers: apiHeaders(config) });
      if (!response.ok) return undefined;
      const json = await response.json();
      const data = json && json.encrypted ? await decryptEnvelope(config.userKeyHex, json.data) : json && json.data;
      if (!isObject(data)) return undefined;
      const entries = Array.isArray(data.entries) ? data.entries : [];
      const found = entries.find((e) => isObject(e) && e.messageId === messageId && isObject(e.push));
      if (found) return found.push;
      if (!Number.isSafeInteger(data.cursor) || data.cursor <= since) return undefined;
      since = data.cursor;
      if (!data.hasMore) return undefined;
    }
    return undefined;
  } finally {
    // The pages read so far hold nothing a later summary could name.
    await writeConfigValue(cursorKey, since).catch((err) => console.warn(LOG, 'could not keep the outbox cursor', err));
  }
}

function readConfigValue(key) {
  return transact(APP_DB, ['config'], 'readonly', (tx) => req(tx.objectStore('config').get(key)));
}

function writeConfigValue(key, value) {
  return transact(APP_DB, ['config'], 'readwrite', (tx) => req(tx.objectStore('config').put(value, key)));
}

// ---------------------------------------------------------------------------
// App shell.

async function precacheShell() {
  let paths;
  try {
    const response = await fetch(SHELL_LIST_URL, { cache: 'no-cache' });
    if (!response.ok) return;
    paths = await response.json();
  } catch {
    return; // No list: the worker still handles pushes, just without an offline shell.
  }
  if (!Array.isArray(paths)) return;
  const cache = await caches.open(SHELL_CACHE);
  await Promise.all(paths.filter(isShellPath).map((path) =>
    cache.add(new Request(path, { cache: 'reload' }))
      .catch((err) => console.warn(LOG, 'could not precache', path, err))));
}

function isShellPath(path) {
  if (typeof path !== 'string') return false;
  try {
    const url = new URL(path, self.location.origin);
    return url.origin === self.location.origin && !url.pathname.startsWith('/api/');
  } catch {
    return false;
  }
}

async function networkFirstNavigation(request) {
  try {
    return await fetch(request);
  } catch (err) {
    const cache = await caches.open(SHELL_CACHE);
    const cached = (await cache.match(request, { ignoreSearch: true })) || (await cache.match('/'));
    if (cached) return cached;
    throw err;
  }
}

async function cacheFirst(request) {
  const cache = await caches.open(SHELL_CACHE);
  return (await cache.match(request)) || fetch(request);
}

// ---------------------------------------------------------------------------
// Approvals (issue 21): a push whose interrupt is of kind 'approval' shows
// its Approve and Deny actions; a click on one posts the decision with the
// push's token, without opening a window, and shows the outcome quietly
// under the same tag (the server's notice, e.g. 'Approved' or 'Already
// answered'). A failed request shows the approval again, so it can be
// retried.

// Approval clicks this worker instance finished: the signal tests wait on.
let approvalsSettled = 0;

/** The approval interrupt a payload carries ({id, kind, toolCallId, expiresAt, decisionToken}), or undefined. */
function approvalOf(payload) {
  const interrupt = isObject(payload) ? payload.interrupt : undefined;
  return isObject(interrupt) && interrupt.kind === 'approval' && nonBlankString(interrupt.id) ? interrupt : undefined;
}

/** showNotification options with the approval's two actions, for a payload that asks for one. */
function withApprovalActions(payload, options) {
  const n = isObject(payload) && isObject(payload.notification) ? payload.notification : {};
  if (!approvalOf(payload) || !nonBlankString(approvalOf(payload).decisionToken) || !Array.isArray(n.actions)) return options;
  const actions = n.actions
    .filter((a) => isObject(a) && (a.action === 'approve' || a.action === 'deny') && nonBlankString(a.title))
    .map((a) => ({ action: a.action, title: a.title }));
  return { ...options, actions };
}

/** Handles a click on an approval's action; false for any other click. */
function handleApprovalAction(event) {
  const data = event.notification.data;
  const payload = isObject(data) ? data.payload : undefined;
  if ((event.action !== 'approve' && event.action !== 'deny') || !approvalOf(payload)) return false;
  const work = decideFromNotification(event.notification, payload, event.action)
    .catch((err) => console.error(LOG, 'approval decision failed', err))
    .finally(() => { approvalsSettled += 1; });
  try {
    event.waitUntil(work);
  } catch {
    // An event DevTools or a test dispatched cannot be extended; the work still runs.
  }
  return true;
}

/** Posts the decision and replaces the approval's notification by its outcome. */
async function decideFromNotification(notification, payload, decision) {
  const approval = approvalOf(payload);
  const config = await readClientConfig().catch(() => null);
  const api = isObject(config) && nonBlankString(config.apiBase) ? config : { apiBase: '/api/v1' };
  const subscription = await self.registration.pushManager.getSubscription().catch(() => null);
  const endpoint = (subscription && subscription.endpoint) || (isObject(config) ? config.endpoint : undefined);
  const headers = { 'content-type': 'application/json' };
  if (nonBlankString(api.clientToken)) headers['x-client-token'] = api.clientToken;
  let answer = null;
  try {
    const response = await fetch(apiURL(api, `interrupts/${encodeURIComponent(approval.id)}/decision`), {
      method: 'POST',
      headers,
      body: JSON.stringify({ decision, token: approval.decisionToken, ...(nonBlankString(endpoint) ? { endpoint } : {}) }),
    });
    answer = await response.json().catch(() => null);
  } catch (err) {
    console.warn(LOG, 'could not post an approval decision', err);
  }
  const notice = isObject(answer) && isObject(answer.data) ? answer.data.notice
    : isObject(answer) && isObject(answer.error) && isObject(answer.error.details) ? answer.error.details.notice : undefined;
  if (!nonBlankString(notice)) {
    // Offline or a server error: the question stays open, with its buttons.
    const { title, options } = buildNotification(payload);
    await showNotification(title, withApprovalActions(payload, options));
    return;
  }
  await showNotification(notification.title, {
    body: notice,
    tag: notification.tag,
    icon: notification.icon || DEFAULT_ICON,
    badge: notification.badge || DEFAULT_BADGE,
    data: notification.data,
    silent: true,
  });
}

// ---------------------------------------------------------------------------
// Receipts (issue 25): a push amsg sent to a registered device carries
// receiptToken, with which this worker reports it 'shown' once its
// notification is shown, 'clicked' (with the action, if any) and 'dismissed'
// (notificationclose). Reports wait in IndexedDB (amsg-receipts, keyed by
// token and type, so a report is queued once) and go to POST /receipts in
// batches of at most RECEIPT_BATCH, at once and again on the next push,
// sync or activation while the server cannot be reached. The server's
// answer settles a batch: 2xx (a repeat counts once there) and 4xx (a
// refusal that a retry would repeat) leave the queue, anything else waits.

const RECEIPTS_DB = {
  name: 'amsg-receipts',
  version: 1,
  upgrade(db) {
    if (!db.objectStoreNames.contains('queue')) db.createObjectStore('queue', { keyPath: 'key' });
  },
};
const RECEIPT_QUEUE = 'queue';
const RECEIPT_BATCH = 50;
// Bounds the queue of a device long offline: reports past it are dropped.
const RECEIPT_QUEUE_MAX = 500;
const RECEIPT_SYNC_TAG = 'amsg-flush-receipts';
let receiptFlushChain = Promise.resolve();
// Batches the server settled: the signal tests wait on.
let receiptBatchesSettled = 0;

/** The report of type (with action) on payload, or undefined for a push that carries no token. */
function receiptOf(payload, type, action) {
  if (!isObject(payload) || !nonBlankString(payload.receiptToken) || !nonBlankString(payload.messageId)) return undefined;
  const report = { messageId: payload.messageId, token: payload.receiptToken, type };
  if (type === 'clicked' && nonBlankString(action)) report.action = action.slice(0, 128);
  return report;
}

/** Queues the report of type on payload, if it carries a token, and flushes the queue. */
async function reportReceipt(payload, type, action) {
  const report = receiptOf(payload, type, action);
  if (!report) return;
  await transact(RECEIPTS_DB, [RECEIPT_QUEUE], 'readwrite', async (tx) => {
    const queue = tx.objectStore(RECEIPT_QUEUE);
    if ((await req(queue.count())) >= RECEIPT_QUEUE_MAX) return;
    await req(queue.put({ key: `${report.token} ${type}`, report, queuedAt: Date.now() }));
  });
  await flushReceipts();
}

/** Reports a notification event (click or close) under the event's lifetime. */
function reportNotificationEvent(event, type) {
  const data = event.notification.data;
  const work = reportReceipt(isObject(data) ? data.payload : undefined, type, event.action)
    .catch((err) => console.warn(LOG, `could not report a notification ${type}`, err));
  try {
    event.waitUntil(work);
  } catch {
    // An event DevTools or a test dispatched cannot be extended; the work still runs.
  }
}

/** Flushes the queued receipts; calls run one after another so no batch is sent twice. */
function flushReceipts() {
  receiptFlushChain = receiptFlushChain.then(flushReceiptsOnce, flushReceiptsOnce);
  return receiptFlushChain;
}

async function flushReceiptsOnce() {
  try {
    const entries = await transact(RECEIPTS_DB, [RECEIPT_QUEUE], 'readonly', (tx) => req(tx.objectStore(RECEIPT_QUEUE).getAll()));
    if (entries.length === 0) return;
    entries.sort((a, b) => a.queuedAt - b.queuedAt);
    const config = await readClientConfig().catch(() => null);
    const api = isObject(config) && nonBlankString(config.apiBase) ? config : { apiBase: '/api/v1' };
    const subscription = await self.registration.pushManager.getSubscription().catch(() => null);
    for (let i = 0; i < entries.length; i += RECEIPT_BATCH) {
      const batch = entries.slice(i, i + RECEIPT_BATCH);
      const body = { receipts: batch.map((e) => e.report) };
      if (subscription && nonBlankString(subscription.endpoint)) body.endpoint = subscription.endpoint;
      let status = 0;
      try {
        const response = await fetch(apiURL(api, 'receipts'), {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        status = response.status;
      } catch {
        // Offline: status stays 0 and the batch waits.
      }
      if (!((status >= 200 && status < 300) || (status >= 400 && status < 500))) {
        await registerReceiptSync();
        return;
      }
      if (status >= 400) console.warn(LOG, 'receipts refused', status);
      await transact(RECEIPTS_DB, [RECEIPT_QUEUE], 'readwrite', async (tx) => {
        const queue = tx.objectStore(RECEIPT_QUEUE);
        for (const e of batch) await req(queue.delete(e.key));
      });
      receiptBatchesSettled += 1;
    }
  } catch (err) {
    console.warn(LOG, 'receipt flush failed', err);
  }
}

async function registerReceiptSync() {
  try {
    if (self.registration.sync) await self.registration.sync.register(RECEIPT_SYNC_TAG);
  } catch {
    // Background Sync is optional; the next push or activation flushes too.
  }
}

// ---------------------------------------------------------------------------
// Event wiring.

self.addEventListener('install', (event) => {
  // A new version takes over at once: pushes must always meet the newest code.
  self.skipWaiting();
  event.waitUntil(precacheShell());
});

self.addEventListener('activate', (event) => {
  event.waitUntil(flushReceipts());
  event.waitUntil((async () => {
    const names = await caches.keys();
    await Promise.all(names
      .filter((name) => name.startsWith(SHELL_CACHE_PREFIX) && name !== SHELL_CACHE)
      .map((name) => caches.delete(name)));
    await self.clients.claim();
  })());
});

self.addEventListener('fetch', (event) => {
  const { request } = event;
  if (request.method !== 'GET') return;
  // DevTools issues these; fetch() would throw on them.
  if (request.cache === 'only-if-cached' && request.mode !== 'same-origin') return;
  const url = new URL(request.url);
  if (url.origin !== self.location.origin || url.pathname.startsWith('/api/')) return;
  event.respondWith(request.mode === 'navigate' ? networkFirstNavigation(request) : cacheFirst(request));
});

// Pushes this worker instance finished, shown or not: the signal tests wait
// on before reading notifications (see self.__amsgTest).
let pushesSettled = 0;

self.addEventListener('push', (event) => {
  if (!event.data) {
    // Nothing to deliver, but iOS still counts a push that shows nothing.
    event.waitUntil(subscribedToApple().then((apple) => ensureShown({}, apple)).catch((err) => console.error(LOG, 'showNotification failed', err)));
    return;
  }
  let payload;
  try {
    payload = event.data.json();
  } catch {
    payload = { message: event.data.text() };
  }
  event.waitUntil(handleWebPush(payload)
    .catch((err) => console.error(LOG, 'push handling failed', err))
    .finally(() => { pushesSettled += 1; }));
});


self.addEventListener('message', (event) => {
  const message = event.data;
  if (!isObject(message)) return;
  switch (message.type) {
    case 'REI_AMSG_DELIVER':
      event.waitUntil(handleDeliver(event));
      break;
    case 'REI_ENQUEUE_REQUEST':
      event.waitUntil(handleEnqueue(event));
      break;
    case 'REI_FLUSH_QUEUE':
      event.waitUntil(flushQueue());
      break;
    default:
  }
});

function replyTo(event) {
  const port = event.ports && event.ports[0];
  return (message) => {
    try {
      if (port) port.postMessage(message);
      else if (event.source) event.source.postMessage(message);
    } catch (err) {
      console.warn(LOG, 'could not reply to the page', err);
    }
  };
}

function errorMessage(err) {
  return err instanceof Error ? err.message : String(err);
}

async function handleDeliver(event) {
  const message = event.data;
  const reply = replyTo(event);
  const { requestId } = message;
  if (!Object.prototype.hasOwnProperty.call(message, 'payload')) {
    reply({ ok: false, error: '[rei-standard-amsg-sw] REI_AMSG_DELIVER requires payload', requestId });
    return;
  }
  const source = nonBlankString(message.source) ? message.source : 'message';
  try {
    const { duplicate, key, dedupeError } = await processPayload(message.payload, source);
    reply({ ok: true, duplicate, key, requestId, ...(dedupeError ? { dedupeError } : {}) });
  } catch (err) {
    reply({ ok: false, error: errorMessage(err), key: dedupeKeyOf(message.payload), requestId });
  }
}

async function handleEnqueue(event) {
  const reply = replyTo(event);
  let queueId;
  try {
    queueId = await enqueueRequest(event.data.request);
  } catch (err) {
    reply({ type: 'REI_QUEUE_RESULT', ok: false, error: errorMessage(err) });
    return;
  }
  await registerQueueSync();
  await flushQueue();
  reply(queueAck(queueId));
}

self.addEventListener('sync', (event) => {
  if (event.tag === QUEUE_SYNC_TAG) event.waitUntil(flushQueue());
  if (event.tag === RECEIPT_SYNC_TAG) event.waitUntil(flushReceipts());
});

self.addEventListener('notificationclick', (event) => {
  event.notification.close();
  reportNotificationEvent(event, 'clicked');
  if (event.action === 'dismiss' || handleApprovalAction(event)) return;
  event.waitUntil(openFromNotification(event.notification.data)
    .catch((err) => console.error(LOG, 'notification click failed', err)));
});

self.addEventListener('notificationclose', (event) => {
  reportNotificationEvent(event, 'dismissed');
});

self.addEventListener('pushsubscriptionchange', (event) => {
  event.waitUntil(renewSubscription(event.oldSubscription, event.newSubscription)
    .catch((err) => console.error(LOG, 'pushsubscriptionchange failed', err)));
});

self.__amsgTest = Object.freeze({
  version: SW_VERSION,
  shellCache: SHELL_CACHE,
  events: REI_SW_EVENT,
  eventNameFor,
  shouldRender,
  buildNotification,
  webPushDisplay,
  resolveSilent,
  isApplePushHost,
  buildQuietNotification,
  buildFallbackNotification,
  dedupeKeyOf,
  normalizeMultipartChunk,
  normalizeQueuedRequest,
  clickTargetURL,
  pickClientForURL,
  async planClick(data) {
    const { url, client } = await planClick(data);
    return { url, clientURL: client ? client.url : null };
  },
  renewSubscription,
  approvalOf,
  withApprovalActions,
  approvalsSettled: () => approvalsSettled,
  receiptOf,
  receiptBatchesSettled: () => receiptBatchesSettled,
  receiptFlushesDone: () => receiptFlushChain.then(() => true),
  queuedReceipts: () => transact(RECEIPTS_DB, [RECEIPT_QUEUE], 'readonly', (tx) => req(tx.objectStore(RECEIPT_QUEUE).getAll())),
  pushesSettled: () => pushesSettled,
  notificationsShown: () => notificationsShown,
  deliveryRecord: (key) => transact(DEDUPE_DB, [DEDUPE_STORE], 'readonly', (tx) => req(tx.objectStore(DEDUPE_STORE).get(key))),
});
