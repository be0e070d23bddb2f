// What this browser keeps: the user id (a UUID v4 made on the first visit),
// the server token, the LLM settings, and this device's registration. All of
// it lives in localStorage and never leaves the browser except in requests to
// this server.

import { ApiError } from './api.js';

const KEY = {
  userId: 'amsg.userId',
  token: 'amsg.clientToken',
  llm: 'amsg.llm',
  device: 'amsg.device',
};

function read(key) {
  try {
    return JSON.parse(localStorage.getItem(key));
  } catch {
    return null;
  }
}

function write(key, value) {
  if (value === null || value === undefined) localStorage.removeItem(key);
  else localStorage.setItem(key, JSON.stringify(value));
  dispatchEvent(new CustomEvent('amsg:settings', { detail: { key } }));
}

const uuidV4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

/** The user id, generated and kept on first use. */
export function userId() {
  let id = read(KEY.userId);
  if (typeof id !== 'string' || !uuidV4.test(id)) {
    id = crypto.randomUUID();
    write(KEY.userId, id);
  }
  return id;
}

/** Replaces the user id with one from another device; throws on a malformed id. */
export function setUserId(id) {
  if (!uuidV4.test(id)) throw new ApiError('INVALID_USER_ID_FORMAT', 'That is not a valid id (a UUID v4 such as 123e4567-e89b-42d3-a456-426614174000).');
  write(KEY.userId, id.toLowerCase());
}

export function token() {
  return read(KEY.token) || '';
}

export function setToken(value) {
  write(KEY.token, value.trim() || null);
}

/** The model the chat and scheduled LLM messages use. */
export function llm() {
  const v = read(KEY.llm) || {};
  return {
    apiUrl: v.apiUrl || '',
    apiKey: v.apiKey || '',
    model: v.model || '',
    contactName: v.contactName || 'Assistant',
    systemPrompt: v.systemPrompt || '',
  };
}

export function setLLM(value) {
  write(KEY.llm, { ...llm(), ...value });
}

export function llmReady(v = llm()) {
  return Boolean(v.apiUrl && v.apiKey && v.model) || (operatorModel && !v.apiUrl && !v.apiKey && !v.model);
}

// Whether the server has a model of its operator's (its capability
// 'operator-model', --llm-api-url), which a request with no API URL, key and
// model uses: learnt from GET /capabilities on start, not stored.
let operatorModel = false;

export function setOperatorModel(value) {
  operatorModel = Boolean(value);
}

export function hasOperatorModel() {
  return operatorModel;
}

/** This device's registration: {endpoint, deviceId, registeredAt} or null. */
export function device() {
  return read(KEY.device);
}

export function setDevice(value) {
  write(KEY.device, value);
}
