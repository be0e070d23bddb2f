// The chat engine, apart from any view: it sends a turn to /instant, records
// each pushed payload in the conversation as it streams in, hands it to the
// service worker, runs requested browser tools and resumes the loop with
// /continue until the model answers without tools.

import * as conversations from './conversations.js';
import * as device from './device.js';
import * as settings from './settings.js';
import * as tools from './tools.js';
import * as worker from './worker.js';

/** The turn in flight: {conversationId, controller} or null. */
let inflight = null;

export function busy(conversation) {
  return Boolean(inflight && conversation && inflight.conversationId === conversation.id);
}

export function stop() {
  if (inflight) inflight.controller.abort();
}

function changed(conversation) {
  dispatchEvent(new CustomEvent('amsg:conversations', { detail: { id: conversation.id } }));
}

/**
 * The copy of a payload the worker gets. The page renders it itself while
 * visible, so a payload without its own display policy notifies only when
 * the page is hidden; so does a tool request or an error, which amsg marks
 * show:'always' for devices where no page shows them. The messageId, the
 * worker's dedupe key, is unchanged.
 */
export function bridgeCopy(payload) {
  const n = payload.notification && typeof payload.notification === 'object' ? payload.notification : null;
  const quiet = payload.messageKind === 'tool_request' || payload.messageKind === 'error';
  if (n && n.show !== undefined && n.show !== 'auto' && !(quiet && n.show === 'always')) return payload;
  if (payload.messageKind !== 'content' && !quiet) return payload;
  return { ...payload, notification: { ...(n || {}), show: 'when-hidden' } };
}

function withSystemPrompt(history, systemPrompt) {
  return systemPrompt ? [{ role: 'system', content: systemPrompt }, ...history] : history;
}

/**
 * Sends text as a new turn of conversation (created when null) and follows
 * it to its end. Returns {conversation, done} at once; done resolves when the
 * turn ends. Failures become error items in the thread; nothing is thrown.
 */
export function send(app, conversation, text) {
  const llm = settings.llm();
  const sessionId = `sess_${crypto.randomUUID()}`;
  if (!conversation) conversation = conversations.create({ sessionId, contactName: llm.contactName });
  conversations.update(conversation, (c) => {
    if (!c.sessionIds.includes(sessionId)) c.sessionIds.push(sessionId);
    c.items.push({ id: `user_${crypto.randomUUID()}`, type: 'user', text, at: Date.now() });
    c.history.push({ role: 'user', content: text });
    if (!c.title) c.title = text.slice(0, 80);
  });
  const controller = new AbortController();
  inflight = { conversationId: conversation.id, controller };
  changed(conversation);
  return { conversation, done: follow(app, conversation, sessionId, llm, controller) };
}

async function follow(app, conversation, sessionId, llm, controller) {
  const base = {
    contactName: conversation.contactName || llm.contactName,
    // Left out when empty (JSON drops undefined): the server's own model
    // then answers (its capability 'operator-model').
    apiUrl: llm.apiUrl || undefined,
    apiKey: llm.apiKey || undefined,
    primaryModel: llm.model || undefined,
    sessionId,
    messageSubtype: 'chat',
  };
  try {
    await app.ready();
    const pushSubscription = await device.streamingSubscription().catch(() => null);
    if (pushSubscription) base.pushSubscription = pushSubscription;
    // /instant starts the loop with the whole history and the tools; each
    // /continue brings only the tool results of the iteration it resumes,
    // and the server restores the rest from the session's transcript.
    let path = 'instant';
    let body = { ...base, tools: tools.definitions(), messages: withSystemPrompt(conversation.history, llm.systemPrompt) };
    for (let iteration = 1; ; iteration++) {
      const round = { contents: [], toolRequest: null };
      await app.client.stream(path, body, {
        signal: controller.signal,
        onPayload: (payload) => receive(conversation, payload, round),
      });
      if (!round.toolRequest) {
        if (round.contents.length) conversations.update(conversation, (c) => c.history.push({ role: 'assistant', content: round.contents.join(' ') }));
        break;
      }
      const results = await runTools(conversation, round);
      path = 'continue';
      body = { ...base, iteration, messages: results };
    }
  } catch (err) {
    if (err && err.name === 'AbortError') {
      addNotice(conversation, 'Stopped following this reply here. If the server finishes it, it still arrives as a notification.');
    } else {
      addError(conversation, sessionId, err);
    }
  } finally {
    inflight = null;
    changed(conversation);
  }
}

function receive(conversation, payload, round) {
  if (typeof payload.sessionId === 'string' && payload.sessionId && !conversation.sessionIds.includes(payload.sessionId)) {
    conversations.update(conversation, (c) => c.sessionIds.push(payload.sessionId));
  }
  conversations.ingest(payload);
  worker.deliver(bridgeCopy(payload)).catch(() => {});
  if (payload.messageKind === 'content') round.contents.push(String(payload.message ?? ''));
  // An approval is answered by the person, not run here: the server resumes
  // the loop once it is decided, and the answer arrives as a push.
  if (payload.messageKind === 'tool_request' && Array.isArray(payload.toolCalls) && payload.toolCalls.length && !conversations.approvalOf(payload)) {
    round.toolRequest = payload;
  }
}

async function runTools(conversation, round) {
  const push = round.toolRequest;
  const item = conversation.items.find((i) => i.id === push.messageId);
  const setState = (index, patch) => {
    if (!item) return;
    conversations.update(conversation, () => Object.assign(item.calls[index], patch));
  };
  const results = [];
  for (const [index, call] of push.toolCalls.entries()) {
    setState(index, { state: 'running' });
    const { ok, result } = await tools.run(call);
    setState(index, { state: ok ? 'done' : 'failed', result });
    results.push({ role: 'tool', tool_call_id: call && call.id, content: result });
  }
  conversations.update(conversation, (c) => {
    c.history.push({ role: 'assistant', content: round.contents.join(' ') || null, tool_calls: push.toolCalls }, ...results);
  });
  return results;
}

function addError(conversation, sessionId, err) {
  const payload = err && err.payload && typeof err.payload === 'object' ? err.payload : null;
  conversations.update(conversation, (c) => {
    const id = (payload && payload.messageId) || `error_${crypto.randomUUID()}`;
    if (c.items.some((i) => i.id === id)) return;
    c.items.push({ id, type: 'error', code: String((err && err.code) || 'ERROR'), text: (err && err.message) || 'Something went wrong', at: Date.now(), sessionId });
  });
}

function addNotice(conversation, text) {
  conversations.update(conversation, (c) => c.items.push({ id: `notice_${crypto.randomUUID()}`, type: 'notice', text, at: Date.now() }));
}
