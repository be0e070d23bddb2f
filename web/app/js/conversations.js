// Conversations kept on this device: what the page sent and every push it
// saw (over SSE or from the worker), grouped by session and deduplicated by
// messageId. A conversation spans several sessions, one per turn; any of its
// session ids finds it, which is how a notification's #/chat/<sessionId>
// opens the right one.

const KEY = 'amsg.conversations.v1';
const MAX_CONVERSATIONS = 50;
const MAX_ITEMS = 400;

let cache = null;

function all() {
  if (!cache) {
    try {
      cache = JSON.parse(localStorage.getItem(KEY)) || [];
    } catch {
      cache = [];
    }
    if (!Array.isArray(cache)) cache = [];
  }
  return cache;
}

function save(changed) {
  const list = all();
  list.sort((a, b) => b.updatedAt - a.updatedAt);
  list.length = Math.min(list.length, MAX_CONVERSATIONS);
  for (const c of list) if (c.items.length > MAX_ITEMS) c.items.splice(0, c.items.length - MAX_ITEMS);
  try {
    localStorage.setItem(KEY, JSON.stringify(list));
  } catch {
    // Storage full: keep working in memory; the oldest go first next time.
    list.length = Math.max(1, Math.floor(list.length / 2));
  }
  dispatchEvent(new CustomEvent('amsg:conversations', { detail: { id: changed && changed.id } }));
}

export function list() {
  return all().slice().sort((a, b) => b.updatedAt - a.updatedAt);
}

/** The conversation that holds sessionId, or undefined. */
export function find(sessionId) {
  return all().find((c) => c.id === sessionId || c.sessionIds.includes(sessionId));
}

export function create({ sessionId, contactName }) {
  const now = Date.now();
  const c = { id: sessionId, sessionIds: [sessionId], contactName, title: '', createdAt: now, updatedAt: now, unread: 0, history: [], items: [] };
  all().push(c);
  save(c);
  return c;
}

/** Applies fn(conversation) and saves. */
export function update(conversation, fn) {
  fn(conversation);
  conversation.updatedAt = Date.now();
  save(conversation);
}

export function markRead(conversation) {
  if (conversation.unread) update(conversation, (c) => { c.unread = 0; });
}

export function remove(conversation) {
  const list = all();
  const i = list.indexOf(conversation);
  if (i >= 0) list.splice(i, 1);
  save(null);
}

/** The item a push becomes in a thread, or null for pushes a chat does not show. */
export function itemOf(payload) {
  // A test notification (POST /test-push) checks the device, it is no conversation.
  if (payload.messageSubtype === 'test') return null;
  const base = { id: payload.messageId || `local-${crypto.randomUUID()}`, at: Date.parse(payload.timestamp) || Date.now() };
  switch (payload.messageKind) {
    case 'content': {
      const item = { ...base, type: 'content', text: String(payload.message ?? ''), index: payload.messageIndex, total: payload.totalMessages };
      // A summary of a reply too long for one push; the outbox holds it whole.
      if (payload._truncated && typeof payload._truncated === 'object') item.truncated = true;
      return item;
    }
    case 'reasoning':
      return { ...base, type: 'reasoning', text: String(payload.reasoningContent ?? '') };
    case 'tool_request':
      if (approvalOf(payload)) return approvalItem(base, payload);
      return {
        ...base,
        type: 'tool',
        text: typeof payload.message === 'string' ? payload.message : '',
        calls: (Array.isArray(payload.toolCalls) ? payload.toolCalls : []).map((call) => ({
          id: call && call.id,
          name: call && call.function && call.function.name,
          state: 'waiting',
        })),
      };
    case 'error':
      return { ...base, type: 'error', code: String(payload.code || 'ERROR'), text: String(payload.message || '') };
    default:
      return null;
  }
}

/**
 * Records a push in its conversation, creating one for an unknown session
 * (a scheduled message, a reply that arrived while the page was closed).
 * Resolves {conversation, item, added}; added is false for a push seen before
 * (whose summary, if it was one, the whole message replaces).
 */
export function ingest(payload, { unread = false } = {}) {
  if (settleApproval(payload)) return { conversation: find(payload.sessionId) || null, item: null, added: false };
  const item = itemOf(payload);
  const sessionId = typeof payload.sessionId === 'string' && payload.sessionId ? payload.sessionId : null;
  if (!item || !sessionId) return { conversation: null, item: null, added: false };
  let c = find(sessionId);
  if (!c) c = create({ sessionId, contactName: payload.contactName || 'amsg' });
  const existing = c.items.find((i) => i.id === item.id);
  if (existing && existing.truncated && !item.truncated) {
    // The whole message, in place of its summary.
    update(c, () => {
      existing.text = item.text;
      delete existing.truncated;
    });
    return { conversation: c, item: existing, added: false };
  }
  if (existing) return { conversation: c, item: existing, added: false };
  update(c, (conv) => {
    conv.items.push(item);
    if (!conv.contactName && payload.contactName) conv.contactName = payload.contactName;
    // A fixed message involves no model, so its session has no transcript.
    if (payload.messageType === 'fixed') conv.fixed = true;
    if (unread && item.type === 'content') conv.unread += 1;
  });
  return { conversation: c, item, added: true };
}

/** The text a conversation is listed with: its title or its last message. */
export function preview(c) {
  for (let i = c.items.length - 1; i >= 0; i--) {
    const item = c.items[i];
    if (item.type === 'content' || item.type === 'user') return item.text;
    if (item.type === 'error') return item.text || item.code;
  }
  return '';
}

/** The text of an LLM message's content: a string, or the text parts of an array. */
function textOf(message) {
  const content = message && message.content;
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.filter((p) => p && p.type === 'text' && typeof p.text === 'string').map((p) => p.text).join('\n');
  return '';
}

/** A tool call's state from its result: a result that is only {error} failed. */
function resultState(result) {
  try {
    const value = JSON.parse(result);
    if (value && typeof value === 'object' && !Array.isArray(value) && Object.keys(value).join() === 'error') return 'failed';
  } catch {
    // Not JSON: a plain result.
  }
  return 'done';
}

/**
 * Merges a session transcript (GET /sessions/{id}) into the session's
 * conversation, created when unknown. Pushes already recorded stay as they
 * are; the transcript adds what no push carries (the user's message, the
 * tool results) and stands in for pushes this browser never got. A
 * conversation without history gets the session's, so it can go on.
 */
export function mergeTranscript(sessionId, transcript, { contactName = '' } = {}) {
  const c = find(sessionId) || create({ sessionId, contactName });
  update(c, (conv) => {
    const has = (id) => conv.items.some((i) => i.id === id);
    const history = [];
    for (const m of transcript.messages) {
      if (!m || typeof m !== 'object') continue;
      const at = Date.parse(m.timestamp) || Date.now();
      const pushes = Array.isArray(m.pushes) ? m.pushes.filter((id) => typeof id === 'string') : [];
      const pushed = pushes.some(has);
      switch (m.type) {
        case 'input': {
          const messages = Array.isArray(m.messages) ? m.messages.filter((x) => x && typeof x === 'object') : [];
          history.splice(0, history.length, ...messages.filter((x) => x.role !== 'system'));
          const text = textOf(messages.findLast((x) => x.role === 'user'));
          if (text && !has(`input_${m.id}`)) {
            conv.items.push({ id: `input_${m.id}`, type: 'user', text, at });
            if (!conv.title) conv.title = text.slice(0, 80);
          }
          break;
        }
        case 'reasoning':
          if (!pushed && m.text) conv.items.push({ id: pushes[0] || `reasoning_${m.id}`, type: 'reasoning', text: m.text, at });
          break;
        case 'reply':
          if (!pushed && m.text) conv.items.push({ id: pushes[0] || `reply_${m.id}`, type: 'content', text: m.text, at });
          history.push({ role: 'assistant', content: m.text || '' });
          break;
        case 'tool-calls': {
          const calls = Array.isArray(m.calls) ? m.calls : [];
          if (!pushed && m.text) conv.items.push({ id: pushes[0] || `reply_${m.id}`, type: 'content', text: m.text, at });
          const ids = new Set(calls.map((call) => call.id));
          if (!conv.items.some((i) => i.type === 'tool' && i.calls.some((call) => ids.has(call.id)))) {
            conv.items.push({ id: `tool_${m.id}`, type: 'tool', text: '', at, calls: calls.map((call) => ({ id: call.id, name: call.name, state: 'waiting' })) });
          }
          const a = m.assistant && typeof m.assistant === 'object' ? m.assistant : {};
          // reasoning_content stays out: providers refuse it in a request.
          history.push({ role: 'assistant', content: a.content ?? null, tool_calls: a.tool_calls });
          break;
        }
        case 'tool-results':
          for (const r of Array.isArray(m.results) ? m.results : []) {
            const result = typeof r.output === 'string' ? r.output : JSON.stringify(r.output ?? null);
            for (const item of conv.items) {
              const call = item.type === 'tool' ? item.calls.find((x) => x.id === r.callId) : null;
              if (call && !call.result) Object.assign(call, { state: resultState(result), result });
            }
            history.push({ role: 'tool', tool_call_id: r.callId, content: result });
          }
          break;
        case 'error':
          if (!pushed) conv.items.push({ id: pushes[0] || `error_${m.id}`, type: 'error', code: String(m.code || 'ERROR'), text: String(m.text || ''), at });
          break;
        case 'interrupt':
        case 'decision':
          mergeApproval(conv, m, pushes[0], at);
          break;
        default:
      }
    }
    // Transcript items and pushes interleave by time; sort is stable. A
    // question is recorded before its round's first push, often within the
    // same millisecond: on a tie the user's message goes first.
    conv.items.sort((a, b) => a.at - b.at || (b.type === 'user') - (a.type === 'user'));
    if (conv.history.length === 0) conv.history = history;
  });
  return c;
}

// --- approvals (issue 21) -------------------------------------------------------

/** The approval a push carries (interrupt.kind 'approval'), or null. */
export function approvalOf(payload) {
  const i = payload && payload.interrupt;
  return i && typeof i === 'object' && i.kind === 'approval' && typeof i.id === 'string' && i.id ? i : null;
}

/** The thread item of an approval push: the tool, its arguments, and the token that decides it. */
function approvalItem(base, payload) {
  const interrupt = approvalOf(payload);
  const call = Array.isArray(payload.toolCalls) ? payload.toolCalls[0] : null;
  const fn = (call && call.function) || {};
  return {
    ...base,
    type: 'approval',
    interruptId: interrupt.id,
    token: typeof interrupt.decisionToken === 'string' ? interrupt.decisionToken : '',
    expiresAt: Date.parse(interrupt.expiresAt) || 0,
    name: typeof fn.name === 'string' ? fn.name : '',
    args: typeof fn.arguments === 'string' ? fn.arguments : '',
    state: 'pending',
  };
}

/**
 * An approval's outcome (a content push whose interrupt has a state) sets
 * the state of the approval's item, wherever it is; it is no message of its
 * own. Returns whether payload was one.
 */
export function settleApproval(payload) {
  const interrupt = approvalOf(payload);
  if (!interrupt || typeof interrupt.state !== 'string' || payload.messageKind !== 'content') return false;
  setApprovalState(interrupt.id, interrupt.state);
  return true;
}

/** Sets the state of the approval item of interruptId, if this browser has it. */
export function setApprovalState(interruptId, state) {
  for (const c of all()) {
    const item = c.items.find((i) => i.type === 'approval' && i.interruptId === interruptId);
    if (item && item.state !== state) update(c, () => { item.state = state; });
  }
}

/**
 * Merges a transcript's interrupt (an approval asked) or decision (its
 * outcome) into conv. An approval known only from the transcript has no
 * token: its card links to #/interrupt/<id>, which fetches it.
 */
function mergeApproval(conv, m, pushId, at) {
  const i = m.interrupt && typeof m.interrupt === 'object' && typeof m.interrupt.id === 'string' ? m.interrupt : null;
  if (!i) return;
  let item = conv.items.find((x) => x.type === 'approval' && x.interruptId === i.id);
  if (!item && m.type === 'interrupt') {
    item = { id: pushId || `approval_${i.id}`, type: 'approval', at, interruptId: i.id, token: '', name: String(i.name || ''), args: '', state: 'pending' };
    conv.items.push(item);
  }
  if (item && m.type === 'decision' && typeof i.state === 'string') item.state = i.state;
}

/** The approval item of interruptId and its conversation, or null. */
export function findApproval(interruptId) {
  for (const c of all()) {
    const item = c.items.find((i) => i.type === 'approval' && i.interruptId === interruptId);
    if (item) return { conversation: c, item };
  }
  return null;
}
