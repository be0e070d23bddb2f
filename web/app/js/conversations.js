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
    case 'content':
      return { ...base, type: 'content', text: String(payload.message ?? ''), index: payload.messageIndex, total: payload.totalMessages };
    case 'reasoning':
      return { ...base, type: 'reasoning', text: String(payload.reasoningContent ?? '') };
    case 'tool_request':
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
 * Resolves {conversation, item, added}; added is false for a push seen before.
 */
export function ingest(payload, { unread = false } = {}) {
  const item = itemOf(payload);
  const sessionId = typeof payload.sessionId === 'string' && payload.sessionId ? payload.sessionId : null;
  if (!item || !sessionId) return { conversation: null, item: null, added: false };
  let c = find(sessionId);
  if (!c) c = create({ sessionId, contactName: payload.contactName || 'amsg' });
  const existing = c.items.find((i) => i.id === item.id);
  if (existing) return { conversation: c, item: existing, added: false };
  update(c, (conv) => {
    conv.items.push(item);
    if (!conv.contactName && payload.contactName) conv.contactName = payload.contactName;
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
