// This device's push registration, as amsg-client does it (reference §2.5):
// subscribe with the server's VAPID key, retry Chromium's zombie endpoint,
// register the subscription with an encrypted PUT, and keep the worker's
// client config current. register() is idempotent and runs on every start.

import { base64ToBytes } from './crypto.js';
import * as settings from './settings.js';
import * as worker from './worker.js';

export const ZOMBIE_HOST = 'permanently-removed.invalid';
const ZOMBIE_ATTEMPTS = 3;
const ZOMBIE_BACKOFF_MS = 800;

// Tests shorten the zombie backoff through this seam.
// subscribeTimeoutMs bounds one pushManager.subscribe: a browser that
// cannot reach its push service (a blocked network, a privacy setting)
// never settles it.
export const timing = { sleep: (ms) => new Promise((r) => setTimeout(r, ms)), subscribeTimeoutMs: 30000 };

function subscribeWithTimeout(registration, options) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => {
      const err = new Error(`The browser did not create a push subscription within ${Math.round(timing.subscribeTimeoutMs / 1000)} seconds.`);
      err.code = 'SUBSCRIBE_TIMEOUT';
      reject(err);
    }, timing.subscribeTimeoutMs);
  });
  return Promise.race([registration.pushManager.subscribe(options), timeout]).finally(() => clearTimeout(timer));
}

/** What this browser can do: 'ok', or why it cannot receive pushes. */
export function support() {
  if (!window.isSecureContext) return 'insecure';
  if (!worker.supported || !('PushManager' in window) || !('Notification' in window)) {
    // iOS offers Web Push only to a page added to the Home Screen.
    return /iPhone|iPad|iPod/.test(navigator.userAgent) ? 'ios-install' : 'unsupported';
  }
  return 'ok';
}

export function permission() {
  return 'Notification' in window ? Notification.permission : 'unsupported';
}

/** Whether notifications are on here: permission granted and this device registered. */
export function enabled() {
  return permission() === 'granted' && Boolean(settings.device());
}

/**
 * This device's push subscription ({endpoint, keys}) while notifications are
 * on here, else null. /instant and /continue name it as pushSubscription:
 * the server then knows the device whose stream carries the reply and sends
 * it no Web Push copy of what the stream delivered, a push iOS would count
 * against the subscription if the worker showed nothing for it.
 */
export async function streamingSubscription() {
  if (!enabled() || support() !== 'ok') return null;
  const registration = await navigator.serviceWorker.getRegistration('/');
  const subscription = registration ? await registration.pushManager.getSubscription() : null;
  if (!subscription) return null;
  const { endpoint, keys } = subscription.toJSON();
  return { endpoint, keys };
}

/**
 * Subscribes, retrying the placeholder endpoint Chromium hands out right
 * after an unsubscribe: unsubscribe, wait 800 ms × attempt, try again, three
 * attempts in all.
 */
export async function subscribe(registration, vapidPublicKey) {
  const applicationServerKey = base64ToBytes(vapidPublicKey);
  let endpoint = '';
  for (let attempt = 1; attempt <= ZOMBIE_ATTEMPTS; attempt++) {
    const subscription = await subscribeWithTimeout(registration, { userVisibleOnly: true, applicationServerKey });
    endpoint = subscription.endpoint || '';
    if (!endpoint.includes(ZOMBIE_HOST)) return subscription;
    try {
      await subscription.unsubscribe();
    } catch {
      // The next subscribe decides.
    }
    if (attempt < ZOMBIE_ATTEMPTS) await timing.sleep(ZOMBIE_BACKOFF_MS * attempt);
  }
  const err = new Error('The browser keeps handing out a dead push endpoint. Restart the browser and try again.');
  err.code = 'PUSH_ENDPOINT_ZOMBIE';
  err.details = { attempts: ZOMBIE_ATTEMPTS, endpoint };
  throw err;
}

function sameKey(subscription, vapidPublicKey) {
  const key = subscription.options && subscription.options.applicationServerKey;
  if (!key) return true; // unknown: keep it
  const have = new Uint8Array(key);
  const want = base64ToBytes(vapidPublicKey);
  return have.length === want.length && have.every((b, i) => b === want[i]);
}

// Registering and removing run one after another, so a removal the user
// asks for is never undone by a registration already under way.
let queue = Promise.resolve();

function exclusive(fn) {
  const run = queue.then(fn, fn);
  queue = run.catch(() => {});
  return run;
}

/**
 * Makes sure this device is subscribed and registered with the server.
 * client must be initialised (user key). Resolves the subscription JSON.
 */
export function register(client, options) {
  return exclusive(() => registerNow(client, options));
}

async function registerNow(client, { onStep = () => {} } = {}) {
  onStep('worker');
  const registration = await worker.register().then(() => worker.ready());
  onStep('key');
  const vapidPublicKey = await client.vapidPublicKey();
  onStep('subscribe');
  let subscription = await registration.pushManager.getSubscription();
  if (subscription && (subscription.endpoint.includes(ZOMBIE_HOST) || !sameKey(subscription, vapidPublicKey))) {
    // A dead endpoint, or one made for another server key (the server's key
    // changed): it can never receive our pushes.
    await subscription.unsubscribe().catch(() => {});
    subscription = null;
  }
  if (!subscription) subscription = await subscribe(registration, vapidPublicKey);
  const json = subscription.toJSON();
  onStep('register');
  const { data: { deviceId } } = await client.putSubscription(json);
  // The page opening is a sign of life; the server expires silent devices.
  await client.deviceSeen(json.endpoint).catch((err) => console.warn('[amsg] could not report this device as seen:', err.message));
  await worker.writeClientConfig({
    apiBase: client.base,
    userId: client.userId,
    userKeyHex: client.userKey,
    clientToken: client.token || undefined,
    vapidPublicKey,
    // The worker names this device when it answers an approval.
    endpoint: json.endpoint,
  });
  settings.setDevice({ endpoint: json.endpoint, deviceId, registeredAt: Date.now() });
  onStep('done');
  return json;
}

/** Removes this device from the server and unsubscribes the browser. */
export function unregister(client) {
  return exclusive(() => unregisterNow(client));
}

async function unregisterNow(client) {
  const stored = settings.device();
  const registration = worker.supported ? await navigator.serviceWorker.getRegistration('/') : null;
  const subscription = registration ? await registration.pushManager.getSubscription() : null;
  const endpoint = (subscription && subscription.endpoint) || (stored && stored.endpoint);
  if (endpoint) await client.deleteSubscription(endpoint);
  if (subscription) await subscription.unsubscribe().catch(() => {});
  settings.setDevice(null);
}
