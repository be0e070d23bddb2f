// The page's side of the service worker: registration, the amsg-app client
// config the worker reads on pushsubscriptionchange, REI_AMSG_DELIVER, and
// the messages the worker posts.
//
// The page never opens the worker's own databases (rei_amsg_sw_dedupe_v1,
// rei-sw): a page that created one empty would block the worker's upgrade.

export const supported = 'serviceWorker' in navigator;

export function register() {
  if (!supported) return Promise.resolve(null);
  return navigator.serviceWorker.register('/sw.js', { scope: '/' });
}

export function ready() {
  return navigator.serviceWorker.ready;
}

/** Writes the config of the contract in sw.js: amsg-app v1, store config, key 'client'. */
export function writeClientConfig(config) {
  return new Promise((resolve, reject) => {
    const request = indexedDB.open('amsg-app', 1);
    request.onupgradeneeded = () => {
      if (!request.result.objectStoreNames.contains('config')) request.result.createObjectStore('config');
    };
    request.onerror = () => reject(request.error);
    request.onsuccess = () => {
      const db = request.result;
      const tx = db.transaction('config', 'readwrite');
      tx.objectStore('config').put(config, 'client');
      tx.oncomplete = () => { db.close(); resolve(); };
      tx.onerror = () => { db.close(); reject(tx.error); };
      tx.onabort = () => { db.close(); reject(tx.error); };
    };
  });
}

let nextRequest = 0;

/**
 * Hands a payload the page received over SSE to the worker, which dedupes it
 * against the Web Push backup of the same messageId and shows what its policy
 * says. Resolves the ack, or null when no worker controls the page.
 */
export function deliver(payload, source = 'sse') {
  const controller = supported && navigator.serviceWorker.controller;
  if (!controller) return Promise.resolve(null);
  return new Promise((resolve) => {
    const channel = new MessageChannel();
    const timer = setTimeout(() => resolve(null), 10000);
    channel.port1.onmessage = (event) => {
      clearTimeout(timer);
      resolve(event.data);
    };
    controller.postMessage({ type: 'REI_AMSG_DELIVER', payload, source, requestId: `page-${++nextRequest}` }, [channel.port2]);
  });
}

/** Calls handlers.push(payload) for REI_AMSG_PUSH and handlers.click(url, data) for NOTIFICATION_CLICKED. */
export function listen(handlers) {
  if (!supported) return;
  navigator.serviceWorker.addEventListener('message', (event) => {
    const message = event.data;
    if (!message || typeof message !== 'object') return;
    if (message.type === 'REI_AMSG_PUSH' && message.payload && typeof message.payload === 'object') handlers.push(message.payload);
    if (message.type === 'NOTIFICATION_CLICKED') handlers.click(message.url, message.data);
  });
  navigator.serviceWorker.startMessages();
}
