// Test page for the amsg service worker: registers /sw.js (as a module
// worker with ?module, for upstream's amsg-sw) and gives the Go browser
// tests a few helpers that speak the worker's page protocol.
'use strict';

const status = document.getElementById('status');
const moduleWorker = new URLSearchParams(location.search).has('module');
navigator.serviceWorker.register('/sw.js', moduleWorker ? { type: 'module' } : undefined).then(
  () => navigator.serviceWorker.ready.then(() => { status.textContent = 'service worker ready'; }),
  (err) => { status.textContent = `registration failed: ${err.message}`; },
);

/** Posts a message to the controlling worker and resolves with its reply on a port. */
function ask(message) {
  return new Promise((resolve) => {
    const channel = new MessageChannel();
    channel.port1.onmessage = (event) => resolve(event.data);
    navigator.serviceWorker.controller.postMessage(message, [channel.port2]);
  });
}

/**
 * Runs fn(store) in a read transaction and resolves its request's result, or
 * null when the worker has not created the database or store yet. It never
 * creates the database: an empty one would block the worker's upgrade.
 */
function readStore(dbName, storeName, fn) {
  return new Promise((resolve, reject) => {
    const open = indexedDB.open(dbName);
    open.onupgradeneeded = () => open.transaction.abort();
    open.onerror = () => (open.error && open.error.name === 'AbortError' ? resolve(null) : reject(open.error));
    open.onsuccess = () => {
      const db = open.result;
      db.onversionchange = () => db.close();
      if (!db.objectStoreNames.contains(storeName)) {
        db.close();
        resolve(null);
        return;
      }
      const request = fn(db.transaction(storeName).objectStore(storeName));
      request.onsuccess = () => { db.close(); resolve(request.result ?? null); };
      request.onerror = () => { db.close(); reject(request.error); };
    };
  });
}

window.amsgTest = {
  ask,
  deliver: (payload, extra = {}) => ask({ type: 'REI_AMSG_DELIVER', payload, ...extra }),
  enqueue: (request) => ask({ type: 'REI_ENQUEUE_REQUEST', request }),
  flush: () => navigator.serviceWorker.controller.postMessage({ type: 'REI_FLUSH_QUEUE' }),
  deliveryRecord: (key) => readStore('rei_amsg_sw_dedupe_v1', 'delivery-dedupe', (s) => s.get(key)),
  pendingMultipart: (id) => readStore('rei-sw', 'multipart-pending', (s) => s.get(id)),
  outbox: () => readStore('rei-sw', 'request-outbox', (s) => s.getAll()),
  // The client config contract of sw.js: database amsg-app, store config, key 'client'.
  writeClientConfig: (config) => new Promise((resolve, reject) => {
    const open = indexedDB.open('amsg-app', 1);
    open.onupgradeneeded = () => open.result.createObjectStore('config');
    open.onerror = () => reject(open.error);
    open.onsuccess = () => {
      const db = open.result;
      const tx = db.transaction('config', 'readwrite');
      tx.objectStore('config').put(config, 'client');
      tx.oncomplete = () => { db.close(); resolve(true); };
      tx.onerror = () => { db.close(); reject(tx.error); };
    };
  }),
};
