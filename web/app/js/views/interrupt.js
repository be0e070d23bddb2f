// Approvals (issue 21): the card an approval shows in its conversation, with
// Approve and Deny while it waits, and the screen #/interrupt/<id> that a
// notification's body (or Safari's navigate, which has no buttons) opens.

import * as conversations from '../conversations.js';
import * as settings from '../settings.js';
import { describeError, emptyState, h, icon } from '../ui.js';

const STATE_TEXT = {
  pending: 'Waiting for your decision',
  approved: 'Approved',
  denied: 'Declined',
  expired: 'No longer waiting',
};

/**
 * Decides an approval from this page. Resolves {state, error}: the state
 * the server says it is in now (also set on its thread item), and the
 * error of a decision that changed nothing.
 */
async function decide(app, approval, decision) {
  const device = settings.device();
  let state = null;
  let error = null;
  try {
    const res = await app.client.decide(approval.interruptId, { decision, token: approval.token, endpoint: device && device.endpoint });
    state = res.data.state;
  } catch (err) {
    error = err;
    state = (err && err.details && err.details.state) || null;
  }
  if (state) conversations.setApprovalState(approval.interruptId, state);
  return { state, error };
}

/**
 * The card of an approval: the tool, its arguments, and while it waits the
 * two buttons. approval is a thread item (conversations.approvalItem) or
 * one built from GET /interrupts.
 */
export function approvalCard(app, approval, { onError = () => {}, onDecided = () => {} } = {}) {
  const pending = approval.state === 'pending' && Boolean(approval.token);
  const button = (decision, label, primary) => h(`button.button${primary ? '.primary' : ''}`, {
    type: 'button',
    'data-decision': decision,
    async onclick(event) {
      for (const b of event.currentTarget.parentElement.querySelectorAll('button')) b.disabled = true;
      const { state, error } = await decide(app, approval, decision);
      if (state) onDecided(state);
      if (error) onError(error);
    },
  }, label);
  return h('div.tool-card.approval', { 'data-id': approval.id, 'data-interrupt': approval.interruptId, role: 'group', 'aria-label': 'Approval' },
    h('div.tool-title', icon('tool', { size: 18 }), h('strong', `Approve ${approval.name || 'a tool'}?`),
      h('span.muted.approval-state', ` · ${STATE_TEXT[approval.state] || approval.state}`)),
    approval.args ? h('details.tool-result', { open: pending }, h('summary', 'Arguments'), h('pre', pretty(approval.args))) : null,
    pending ? h('div.actions', button('approve', 'Approve', true), button('deny', 'Deny', false)) : null,
    approval.state === 'pending' && !approval.token
      ? h('div.actions', h('a.button', { href: `#/interrupt/${encodeURIComponent(approval.interruptId)}` }, 'Answer')) : null);
}

function pretty(text) {
  try {
    return JSON.stringify(typeof text === 'string' ? JSON.parse(text) : text, null, 2);
  } catch {
    return String(text);
  }
}

/** #/interrupt/<id>: one approval, from this browser's threads or the server's pending list. */
export function render(app, params) {
  const interruptId = decodeURIComponent(params[0] || '');
  const view = h('section.view.interrupt');
  const heading = h('h1', { tabindex: '-1' }, 'Approval');
  const body = h('div.interrupt-body', h('p.muted', { role: 'status' }, 'Loading…'));
  view.append(heading, body);
  let destroyed = false;

  function show(approval, error) {
    if (destroyed) return;
    if (!approval) {
      body.replaceChildren(emptyState({
        title: 'Nothing to decide',
        text: error ? describeError(error) : 'This approval was answered on another device, or it is no longer waiting.',
        actions: [h('a.button', { href: '#/chat' }, 'Open the chat')],
        headingLevel: 2,
      }));
      return;
    }
    const errorLine = h('p.form-error', { role: 'alert', hidden: true });
    body.replaceChildren(approvalCard(app, approval, {
      onDecided: (state) => show({ ...approval, state }),
      onError(err) {
        errorLine.hidden = false;
        errorLine.textContent = describeError(err);
      },
    }), errorLine, approval.sessionId ? h('p', h('a', { href: `#/chat/${encodeURIComponent(approval.sessionId)}` }, 'Open the conversation')) : null);
  }

  function local() {
    const found = conversations.findApproval(interruptId);
    return found ? { ...found.item, sessionId: found.conversation.id } : null;
  }

  async function load() {
    const known = local();
    if (known && known.state !== 'pending') return show(known);
    try {
      await app.ready();
      const res = await app.client.pendingInterrupts();
      const i = (res.data.interrupts || []).find((x) => x.id === interruptId);
      if (!i) return show(known && known.state === 'pending' ? { ...known, state: 'expired', token: '' } : null);
      show({
        id: `approval_${i.id}`, interruptId: i.id, token: i.decisionToken, name: i.tool, sessionId: i.sessionId,
        args: i.arguments == null ? '' : JSON.stringify(i.arguments), state: 'pending',
      });
    } catch (err) {
      show(known, known ? null : err);
    }
  }

  function onChange() {
    const known = local();
    if (known) show(known);
  }
  addEventListener('amsg:conversations', onChange);
  load();
  return {
    el: view,
    title: 'Approval',
    focus: heading,
    destroy() {
      destroyed = true;
      removeEventListener('amsg:conversations', onChange);
    },
  };
}
