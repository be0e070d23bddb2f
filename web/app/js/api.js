// The amsg HTTP client: the headers, encryption and error envelope of
// amsg-client (reference §2.2–§2.4), for the endpoints the page uses.

import { open, seal } from './crypto.js';
import { consumeSSE } from './sse.js';

/** A failed request: the server's error code and message, or a local one. */
export class ApiError extends Error {
  constructor(code, message, { status = 0, details } = {}) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    this.status = status;
    this.details = details;
  }
}

export class Client {
  /**
   * base: the API base path; userId: the UUID v4 of this user; token: the
   * server's shared secret (X-Client-Token) or ''; userKey: the 64-hex key
   * from get-user-key (init fetches it).
   */
  constructor({ base = '/api/v1', userId, token = '', userKey = '' }) {
    this.base = base.replace(/\/+$/, '');
    this.userId = userId;
    this.token = token;
    this.userKey = userKey;
  }

  url(name, query) {
    const url = new URL(`${this.base}/${name}`, location.origin);
    for (const [k, v] of Object.entries(query || {})) {
      if (v !== undefined && v !== null && v !== '') url.searchParams.set(k, String(v));
    }
    return url.href;
  }

  headers({ user = true, encryptedBody = false, encryptedResponse = false } = {}) {
    const h = {};
    if (encryptedBody) h['Content-Type'] = 'application/json';
    if (user || encryptedBody || encryptedResponse) h['X-User-Id'] = this.userId;
    if (encryptedBody) h['X-Payload-Encrypted'] = 'true';
    if (encryptedResponse) h['X-Response-Encrypted'] = 'true';
    if (encryptedBody || encryptedResponse) h['X-Encryption-Version'] = '1';
    if (this.token) h['X-Client-Token'] = this.token;
    return h;
  }

  /**
   * Sends one request and returns the parsed success body. body is sealed
   * with the user key, plainBody sent as it is (amsg's own routes that carry
   * nothing secret); encryptedResponse asks for, and opens, an encrypted
   * data member.
   */
  async call(method, name, { query, body, plainBody, user = true, encryptedResponse = false, signal } = {}) {
    const init = { method, signal, headers: this.headers({ user, encryptedBody: body !== undefined, encryptedResponse }) };
    if (body !== undefined) {
      this.requireKey();
      init.body = JSON.stringify(await seal(this.userKey, body));
    } else if (plainBody !== undefined) {
      init.headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(plainBody);
    }
    const response = await send(this.url(name, query), init);
    const json = await readJSON(response);
    if (json.encrypted === true && json.data && typeof json.data === 'object') {
      this.requireKey();
      try {
        json.data = await open(this.userKey, json.data);
      } catch {
        throw new ApiError('DECRYPTION_FAILED', 'The server’s answer could not be decrypted with this browser’s key.');
      }
    }
    return json;
  }

  requireKey() {
    if (!/^[0-9a-f]{64}$/i.test(this.userKey)) throw new ApiError('NOT_INITIALISED', 'This browser has no user key yet.');
  }

  /** GET /get-user-key; keeps and returns the key. */
  async init() {
    const { data } = await this.call('GET', 'get-user-key');
    if (!data || !/^[0-9a-f]{64}$/i.test(data.userKey)) throw new ApiError('INVALID_USER_KEY', 'Invalid user key format');
    this.userKey = data.userKey;
    return this.userKey;
  }

  async vapidPublicKey() {
    return (await this.call('GET', 'vapid-public-key', { user: false })).publicKey;
  }

  async capabilities() {
    try {
      return await this.call('GET', 'capabilities', { user: false });
    } catch (err) {
      if (err.status === 404) return null;
      throw err;
    }
  }

  /** PUT /push-subscription, with this browser's language for the notification texts the server writes. */
  putSubscription(subscription) {
    const body = { subscription, updatedAt: Date.now() };
    if (navigator.language) body.language = navigator.language;
    return this.call('PUT', 'push-subscription', { body });
  }

  getSubscription() {
    return this.call('GET', 'push-subscription');
  }

  /** Deletes one device (by endpoint) or, without one, every device of the user. */
  deleteSubscription(endpoint) {
    return this.call('DELETE', 'push-subscription', { query: { endpoint } });
  }

  /** GET /devices: amsg's own; the user's devices with when each was last seen. */
  devices() {
    return this.call('GET', 'devices');
  }

  /** DELETE /devices?deviceId=: amsg's own; removes one device by its id. */
  deleteDevice(deviceId) {
    return this.call('DELETE', 'devices', { query: { deviceId } });
  }

  /** POST /device-seen: amsg's own; tells the server the device with this endpoint is alive. */
  deviceSeen(endpoint) {
    return this.call('POST', 'device-seen', { plainBody: { endpoint } });
  }

  /** POST /test-push: amsg's own; one notification to every device of the user. */
  testPush() {
    return this.call('POST', 'test-push');
  }

  /** GET /preferences: amsg's own; the user's {timeZone, quietHours, dailyLimit}. */
  preferences() {
    return this.call('GET', 'preferences', { encryptedResponse: true });
  }

  /** PUT /preferences: members given replace the stored ones, null clears one. */
  putPreferences(preferences) {
    return this.call('PUT', 'preferences', { body: preferences });
  }

  scheduleMessage(task) {
    return this.call('POST', 'schedule-message', { body: task });
  }

  updateMessage(uuid, patch) {
    return this.call('PUT', 'update-message', { query: { id: uuid }, body: patch });
  }

  cancelMessage(uuid) {
    return this.call('DELETE', 'cancel-message', { query: { id: uuid } });
  }

  listMessages({ status, limit = 100, offset = 0 } = {}) {
    return this.call('GET', 'messages', { query: { status, limit, offset }, encryptedResponse: true });
  }

  getMessage(uuid) {
    return this.call('GET', 'message', { query: { id: uuid }, encryptedResponse: true });
  }

  /** GET /outbox: a page of the user's unacknowledged pushes after the cursor since. */
  outbox({ since = 0, limit = 100 } = {}) {
    return this.call('GET', 'outbox', { query: { since, limit }, encryptedResponse: true });
  }

  /** GET /interrupts?status=pending: the approvals the user's agent loops wait for. */
  pendingInterrupts() {
    return this.call('GET', 'interrupts', { query: { status: 'pending' }, encryptedResponse: true });
  }

  /**
   * POST /interrupts/{id}/decision: approves or denies with the approval's
   * token, its only credential.
   */
  decide(interruptId, { decision, token, reason, endpoint }) {
    return this.call('POST', `interrupts/${encodeURIComponent(interruptId)}/decision`, {
      user: false, plainBody: { decision, token, ...(reason ? { reason } : {}), ...(endpoint ? { endpoint } : {}) },
    });
  }

  /** GET /sessions/{sessionId}: the transcript of one of the user's agent sessions. */
  session(sessionId) {
    return this.call('GET', `sessions/${encodeURIComponent(sessionId)}`, { encryptedResponse: true });
  }

  /**
   * POSTs /instant or /continue, encrypted, and reads the SSE answer,
   * handing each payload to onPayload. Rejects with ApiError for an HTTP
   * error and StreamError for an `event: error`.
   */
  async stream(path, payload, { onPayload, signal }) {
    this.requireKey();
    const response = await send(this.url(path), {
      method: 'POST',
      signal,
      headers: { ...this.headers({ encryptedBody: true }), Accept: 'text/event-stream' },
      body: JSON.stringify(await seal(this.userKey, payload)),
    });
    const type = (response.headers.get('Content-Type') || '').split(';')[0].trim().toLowerCase();
    if (!response.ok || type !== 'text/event-stream') {
      await readJSON(response); // throws the server's error
      throw new ApiError('UNEXPECTED_RESPONSE', `Expected a stream, got ${type || 'no content type'}`, { status: response.status });
    }
    await consumeSSE(response, onPayload);
  }
}

async function send(url, init) {
  try {
    return await fetch(url, init);
  } catch (err) {
    if (err && err.name === 'AbortError') throw err;
    throw new ApiError('NETWORK', 'The server cannot be reached. Check your connection.');
  }
}

async function readJSON(response) {
  let json;
  try {
    json = await response.json();
  } catch {
    throw new ApiError(`HTTP_${response.status}`, `The server answered ${response.status} ${response.statusText}`.trim(), { status: response.status });
  }
  if (!json || json.success !== true) {
    const error = (json && json.error) || {};
    throw new ApiError(error.code || `HTTP_${response.status}`, error.message || `Request failed (${response.status})`,
      { status: response.status, details: error.details });
  }
  return json;
}
