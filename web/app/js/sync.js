// Catching up with the server. Pushes that arrived while no page was open
// reached only the worker, which showed them and forgot them; the server
// keeps every push in the user's outbox (GET /outbox), and the transcript
// of every agent session (GET /sessions/{id}). This module reads the outbox
// from a cursor kept in this browser, and restores a session this browser
// never saw (a notification clicked while the page was closed, a chat
// started on another device) from both.

import * as conversations from './conversations.js';
import * as settings from './settings.js';

const CURSOR = 'amsg.outboxCursor';
const PAGE = 100;
// Pages one catch-up reads at most; the next one goes on from the cursor.
const MAX_PAGES = 20;

let running = null;

/**
 * Reads the outbox from the cursor and hands every push to receive, as if
 * the worker had posted it. One catch-up runs at a time; a call while one
 * runs shares it. The outbox is left unacknowledged: the user's other
 * devices catch up from it too.
 */
export function catchUp(app, receive) {
  if (!running) running = pull(app, receive).finally(() => { running = null; });
  return running;
}

async function pull(app, receive) {
  await app.ready();
  const key = `${CURSOR}.${app.client.userId}`; // each user id has its own outbox
  let since = Number(localStorage.getItem(key)) || 0;
  for (let page = 0; page < MAX_PAGES; page++) {
    const { data } = await app.client.outbox({ since, limit: PAGE });
    const entries = data && Array.isArray(data.entries) ? data.entries : [];
    for (const entry of entries) {
      if (entry && entry.push && typeof entry.push === 'object') receive(entry.push);
    }
    if (!data || !Number.isSafeInteger(data.cursor) || data.cursor <= since) return;
    since = data.cursor;
    localStorage.setItem(key, String(since));
    if (!data.hasMore) return;
  }
}

/**
 * Fills the conversation of sessionId from the server: the pushes of the
 * outbox, then what only the transcript knows (the user's message, the
 * tool results, a reply whose pushes are gone). Resolves the conversation,
 * or null when the server knows nothing of the session either.
 */
export async function restore(app, sessionId, receive) {
  await catchUp(app, receive);
  let transcript = null;
  const known = conversations.find(sessionId);
  try {
    if (!known || !known.fixed) ({ data: transcript } = await app.client.session(sessionId));
  } catch (err) {
    // Pruned, or never an agent session.
    if (err.status !== 404) throw err;
  }
  if (transcript && Array.isArray(transcript.messages)) {
    conversations.mergeTranscript(sessionId, transcript, { contactName: settings.llm().contactName });
  }
  const conversation = conversations.find(sessionId);
  if (conversation) conversations.update(conversation, (c) => { c.restored = true; });
  return conversation || null;
}
