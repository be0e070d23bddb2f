// Chat: the conversation list and a thread. The thread renders from the
// conversation store, appending items as they arrive, so a reply keeps
// streaming in while the user looks elsewhere.

import * as engine from '../chat-engine.js';
import * as conversations from '../conversations.js';
import * as device from '../device.js';
import * as settings from '../settings.js';
import * as tools from '../tools.js';
import { describeError, emptyState, formatTime, h, icon, relativeTime } from '../ui.js';
import { approvalCard } from './interrupt.js';

const SUGGESTIONS = [
  'What time is it where I am?',
  'Which time zone am I in?',
  'Write me a two-line poem about the sea.',
];

export function render(app, params) {
  const sessionId = params[0] ? decodeURIComponent(params[0]) : null;
  const isNew = sessionId === 'new';
  let conversation = sessionId && !isNew ? conversations.find(sessionId) : null;
  // A session this browser never saw, or knows only from its pushes, is
  // filled from the server once: the state of that, for the empty thread.
  let restoring = Boolean(sessionId && !isNew &&
    (!conversation || (!conversation.restored && !conversation.items.some((i) => i.type === 'user'))));
  let restoreError = null;

  const view = h('section.view.chat', { class: sessionId ? 'has-thread' : 'no-thread' });
  const listPane = h('div.conversations');
  const threadPane = h('div.thread');
  view.append(listPane, threadPane);
  const heading = h('h1.visually-hidden', { tabindex: '-1' }, 'Chat');
  view.prepend(heading);

  // --- conversation list ---------------------------------------------------
  function renderList() {
    const items = conversations.list();
    const activeId = conversation && conversation.id;
    listPane.replaceChildren(
      h('div.pane-header', h('h2', 'Conversations'),
        h('a.button.icon-only', { href: '#/chat/new', 'aria-label': 'New conversation', title: 'New conversation' }, icon('plus'))),
      items.length
        ? h('ul.conversation-list', items.map((c) => h('li',
          h('a.conversation', { href: `#/chat/${encodeURIComponent(c.id)}`, 'aria-current': c.id === activeId ? 'page' : false },
            h('span.avatar', { 'aria-hidden': 'true' }, initial(c.contactName)),
            h('span.conversation-text',
              h('span.conversation-top', h('strong', c.title || c.contactName || 'Conversation'),
                h('time.muted.small', { datetime: new Date(c.updatedAt).toISOString() }, relativeTime(c.updatedAt))),
              h('span.muted.small.preview', conversations.preview(c) || 'No messages yet')),
            c.unread ? h('span.unread', { 'aria-label': `${c.unread} unread` }, String(c.unread)) : null))))
        : h('div.list-empty', h('p.muted', 'No conversations yet.'), h('a.button', { href: '#/chat/new' }, icon('plus'), 'New conversation')));
  }

  // --- thread --------------------------------------------------------------
  const log = h('div.messages', { role: 'log', 'aria-live': 'polite', 'aria-label': 'Messages', tabindex: '0' });
  const elements = new Map(); // item id → element
  const input = h('textarea#composer-input', {
    rows: 1, placeholder: 'Message', autocomplete: 'off', enterkeyhint: 'send',
    oninput: () => autosize(input),
    onkeydown(event) {
      if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        form.requestSubmit();
      }
    },
  });
  const sendButton = h('button.button.primary.send', { type: 'submit' });
  const form = h('form.composer', { onsubmit: submit },
    h('label.visually-hidden', { for: 'composer-input' }, 'Message'), input, sendButton);
  const typing = h('div.msg.assistant.typing', h('div.bubble', h('span.dots', h('span'), h('span'), h('span')), h('span.visually-hidden', 'Waiting for the reply')));

  function renderThread() {
    const llm = settings.llm();
    // A session asked for by address that this browser does not have (yet).
    const missing = Boolean(sessionId && !isNew && !conversation);
    const title = conversation ? (conversation.contactName || 'Conversation') : missing ? 'Conversation' : 'New conversation';
    const subtitle = conversation ? `Started ${relativeTime(conversation.createdAt)}`
      : missing ? (restoring ? 'Loading…' : 'Not available')
        : device.enabled() ? 'Replies also arrive as notifications' : 'Notifications are off: replies show only here';
    const banners = [];
    if (!settings.llmReady(llm)) {
      banners.push(h('div.notice.warn', { role: 'note' }, icon('sparkle'),
        h('p', 'Add your model’s API URL, key and name to start chatting. ', h('a', { href: '#/settings' }, 'Open settings'))));
    }
    if (!device.enabled()) {
      banners.push(h('div.notice', { role: 'note' }, icon('bell'),
        h('p', 'Notifications are off on this device, so replies only show while this page is open. ', h('a', { href: '#/welcome' }, 'Turn them on'))));
    }
    threadPane.replaceChildren(...[
      h('div.pane-header.thread-header',
        h('a.button.icon-only.back', { href: '#/chat', 'aria-label': 'All conversations' }, icon('back')),
        h('span.avatar', { 'aria-hidden': 'true' }, initial(conversation ? conversation.contactName : llm.contactName)),
        h('div', h('h2', title), h('p.muted.small', subtitle))),
      banners.length ? h('div.banners', banners) : null,
      log,
      missing ? null : form,
    ].filter(Boolean));
    elements.clear();
    log.replaceChildren();
    if (!conversation || conversation.items.length === 0) {
      log.append(emptyThread(llm));
    } else {
      for (const item of conversation.items) appendItem(item);
    }
    updateBusy();
  }

  function emptyThread(llm) {
    if (sessionId && !isNew && !conversation) {
      if (restoring) return h('p.muted.thread-loading', { role: 'status' }, 'Loading the conversation…');
      return h('div.thread-empty', emptyState({
        title: restoreError ? 'Could not load this conversation' : 'Conversation not found',
        text: restoreError ? `${describeError(restoreError)} New replies to it will appear here when they arrive.`
          : 'Neither this browser nor the server has it any more. New replies to it will appear here when they arrive.',
        actions: [h('a.button', { href: '#/chat/new' }, 'Start a new one')],
        headingLevel: 3,
      }));
    }
    return h('div.empty.thread-empty', emptyState({
      title: `Say hello to ${llm.contactName}`,
      text: 'The reply streams in here and also arrives as a notification if you leave. The assistant can check the time, your time zone' +
        (tools.definitions().some((t) => t.function.name === 'get_battery') ? ' and your battery' : '') + ' in this browser.',
      headingLevel: 3,
    }), h('div.suggestions', SUGGESTIONS.map((text) => h('button.chip', {
      type: 'button',
      disabled: !settings.llmReady(llm),
      onclick: () => { input.value = text; form.requestSubmit(); },
    }, text))));
  }

  function appendItem(item) {
    const el = renderItem(item, app);
    elements.set(item.id, el);
    log.append(el);
  }

  function sync() {
    if (!conversation) return;
    if (elements.size === 0 && conversation.items.length) log.replaceChildren();
    for (const item of conversation.items) {
      const el = elements.get(item.id);
      if (!el) appendItem(item);
      else if (item.type === 'tool' || item.type === 'approval') {
        const fresh = renderItem(item, app);
        el.replaceWith(fresh);
        elements.set(item.id, fresh);
      }
    }
    updateBusy();
  }

  function updateBusy() {
    const busy = engine.busy(conversation);
    if (busy) log.append(typing);
    else typing.remove();
    sendButton.replaceChildren(busy ? icon('stop', { size: 18 }) : icon('send', { size: 18 }), busy ? 'Stop' : 'Send');
    sendButton.classList.toggle('stop', busy);
    sendButton.disabled = !busy && !settings.llmReady();
    input.disabled = busy;
    log.scrollTop = log.scrollHeight;
  }

  async function submit(event) {
    event.preventDefault();
    if (engine.busy(conversation)) {
      engine.stop();
      return;
    }
    const text = input.value.trim();
    if (!text || !settings.llmReady()) return;
    input.value = '';
    autosize(input);
    const starting = !conversation;
    const turn = engine.send(app, conversation, text);
    if (starting) {
      // A new conversation: show it under its own address.
      conversation = turn.conversation;
      history.replaceState(null, '', `#/chat/${encodeURIComponent(conversation.id)}`);
      view.classList.replace('no-thread', 'has-thread');
      renderThread();
      renderList();
    }
    await turn.done;
    input.focus();
  }

  function onChange(event) {
    renderList();
    if (!conversation && sessionId && !isNew) {
      conversation = conversations.find(sessionId) || null;
      if (conversation) renderThread();
      return;
    }
    if (conversation && (!event.detail || !event.detail.id || event.detail.id === conversation.id)) {
      conversations.markRead(conversation);
      sync();
    }
  }
  let destroyed = false;
  addEventListener('amsg:conversations', onChange);
  addEventListener('amsg:settings', renderThread);

  renderList();
  renderThread();
  if (conversation) conversations.markRead(conversation);
  if (restoring) {
    app.restore(sessionId).catch((err) => { restoreError = err; }).finally(() => {
      restoring = false;
      if (destroyed) return;
      // Restored items may sort before those shown: render the thread anew.
      conversation = conversations.find(sessionId) || null;
      renderList();
      renderThread();
      if (conversation) conversations.markRead(conversation);
    });
  }
  return {
    el: view,
    title: conversation ? conversation.contactName : 'Chat',
    focus: sessionId ? input : heading,
    destroy() {
      destroyed = true;
      removeEventListener('amsg:conversations', onChange);
      removeEventListener('amsg:settings', renderThread);
    },
  };
}

function initial(name) {
  return (String(name || 'a').trim()[0] || 'a').toUpperCase();
}

function autosize(textarea) {
  textarea.style.height = 'auto';
  textarea.style.height = `${Math.min(textarea.scrollHeight, 200)}px`;
}

function renderItem(item, app) {
  const time = item.at ? h('time.msg-time', { datetime: new Date(item.at).toISOString() }, formatTime(item.at)) : null;
  switch (item.type) {
    case 'user':
      return h('div.msg.user', { 'data-id': item.id }, h('div.bubble', item.text), time);
    case 'content':
      return h('div.msg.assistant', { 'data-id': item.id }, h('div.bubble', item.text), time);
    case 'reasoning':
      return h('details.reasoning', { 'data-id': item.id },
        h('summary', icon('sparkle', { size: 16 }), 'Thinking'), h('div.reasoning-text', item.text));
    case 'tool':
      return h('div.tool-card', { 'data-id': item.id, role: 'group', 'aria-label': 'Tool request' },
        h('div.tool-title', icon('tool', { size: 18 }), h('strong', 'Using this browser'), item.text ? h('span.muted', ` · ${item.text}`) : null),
        h('ul.tool-calls', item.calls.map((call) => h(`li.tool-call.${call.state}`,
          h('span.tool-state', { 'aria-hidden': 'true' }, call.state === 'done' ? icon('check', { size: 14 }) : call.state === 'failed' ? icon('alert', { size: 14 }) : ''),
          h('span', tools.label(call.name), h('code.small', ` ${call.name}`)),
          h('span.visually-hidden', ` (${call.state})`),
          call.result ? h('details.tool-result', h('summary', 'Result'), h('pre', pretty(call.result))) : null))));
    case 'error':
      return h('div.msg-error', { 'data-id': item.id },
        icon('alert', { size: 18 }), h('div', h('p', describeError({ code: item.code, message: item.text })), h('p.small.muted', `${item.code}${item.text ? `: ${item.text}` : ''}`)));
    case 'notice':
      return h('p.msg-notice.muted.small', { 'data-id': item.id }, item.text);
    case 'approval':
      return approvalCard(app, item);
    default:
      return h('div', { hidden: true });
  }
}

function pretty(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}
