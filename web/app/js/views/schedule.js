// Schedule: the user's scheduled messages with their next time and last
// error, and the form that creates or edits one (fixed, prompted, auto, on
// a cron expression or not).

import * as settings from '../settings.js';
import { describeError, emptyState, errorDetail, field, formatDateTime, h, icon, relativeTime, toast } from '../ui.js';
import { epochToWall, localZone, validZone, wallToEpoch, zones } from '../zones.js';

const TYPES = {
  fixed: { label: 'Fixed message', hint: 'Sends exactly the text you write.' },
  prompted: { label: 'Written by the model', hint: 'The model writes the message from your prompt each time.' },
  auto: { label: 'Check-in', hint: 'The model decides what to say, guided by your prompt.' },
};

const REPEATS = { none: 'Once', daily: 'Every day', weekly: 'Every week', cron: 'Custom (cron)' };

const NOTES = 'amsg.taskNotes';

// What a task says: the projection the server lists carries no text, so the
// page keeps one here (and in the task's metadata, for other devices).
function notes() {
  try {
    return JSON.parse(localStorage.getItem(NOTES)) || {};
  } catch {
    return {};
  }
}

function setNote(uuid, text) {
  const all = notes();
  if (text) all[uuid] = text.slice(0, 280);
  else delete all[uuid];
  localStorage.setItem(NOTES, JSON.stringify(all));
}

// --- list --------------------------------------------------------------------

export function renderList(app) {
  const heading = h('h1', { tabindex: '-1' }, 'Scheduled messages');
  const body = h('div.task-body', { 'aria-live': 'polite', 'aria-busy': 'true' }, h('p.muted', 'Loading…'));
  const view = h('section.view.schedule',
    h('div.view-header', heading, h('a.button.primary', { href: '#/schedule/new' }, icon('plus'), 'New message')),
    body);

  async function load() {
    body.setAttribute('aria-busy', 'true');
    let data;
    try {
      await app.ready();
      ({ data } = await app.client.listMessages());
    } catch (err) {
      body.replaceChildren(h('div.notice.error', { role: 'alert' }, icon('alert'),
        h('div', h('p', describeError(err)), h('p.small.muted', errorDetail(err)))),
      h('div.actions', h('button.button', { type: 'button', onclick: load }, 'Try again')));
      return;
    } finally {
      body.setAttribute('aria-busy', 'false');
    }
    const tasks = (data && Array.isArray(data.tasks)) ? data.tasks : [];
    if (tasks.length === 0) {
      body.replaceChildren(emptyState({
        title: 'Nothing scheduled',
        text: 'Schedule a reminder, a message the model writes for you at a set time, or a daily check-in. It arrives as a notification, to the second.',
        actions: [h('a.button.primary', { href: '#/schedule/new' }, icon('plus'), 'Schedule a message')],
      }));
      return;
    }
    const known = notes();
    body.replaceChildren(h('ul.task-list', tasks.map((task) => taskRow(task, known[task.uuid]))));
  }

  function taskRow(task, note) {
    const next = Date.parse(task.nextSendAt);
    const type = TYPES[task.messageType] ? TYPES[task.messageType].label : task.messageType;
    const repeat = task.recurrenceType === 'cron' && task.cronExpr ? `Cron ${task.cronExpr}` : (REPEATS[task.recurrenceType] || 'Once');
    const failed = task.status === 'failed';
    const error = lastErrorText(task.lastError);
    const name = senderOf(task);
    const actions = h('div.task-actions',
      task.status === 'pending' ? h('a.button.ghost', { href: `#/schedule/edit/${encodeURIComponent(task.uuid)}`, 'aria-label': `Edit message from ${name}` }, icon('edit'), 'Edit') : null,
      h('button.button.ghost.danger', { type: 'button', 'aria-label': `Cancel message from ${name}`, onclick: () => confirmCancel(task, row, actions) }, icon('trash'), 'Cancel'));
    const row = h('li.task', { 'data-uuid': task.uuid },
      h('span.avatar', { 'aria-hidden': 'true' }, (name.trim()[0] || '?').toUpperCase()),
      h('div.task-main',
        h('div.task-top', h('strong', name), h('span.badge', type),
          h('span.badge.subtle', task.recurrenceType && task.recurrenceType !== 'none' ? icon('repeat', { size: 14 }) : null, repeat),
          failed ? h('span.badge.danger', 'Failed') : null),
        note ? h('p.task-note', note) : null,
        task.deferredUntil ? h('p.task-deferred.small', icon('clock', { size: 14 }), 'Waits for your quiet hours to end: arrives ',
          h('time', { datetime: task.deferredUntil }, formatDateTime(Date.parse(task.deferredUntil), task.tzId || undefined))) : null,
        h('p.muted.small', Number.isFinite(next)
          ? [failed ? 'Was due ' : 'Next ', h('time', { datetime: task.nextSendAt }, formatDateTime(next, task.tzId || undefined)), ` · ${relativeTime(next)}`, task.tzId ? ` · ${task.tzId}` : '']
          : 'No next time'),
        error ? h('p.task-error.small', icon('alert', { size: 14 }), failed ? `Failed: ${error}` : `Last attempt failed: ${error}${task.retryCount ? ` (retry ${task.retryCount})` : ''}`) : null),
      actions);
    return row;
  }

  function confirmCancel(task, row, actions) {
    const keep = h('button.button', { type: 'button', onclick: () => confirm.replaceWith(actions) }, 'Keep it');
    const confirm = h('div.task-actions.confirm', { role: 'group', 'aria-label': 'Confirm cancel' },
      h('span.small', 'Cancel this message?'), keep,
      h('button.button.danger-solid', {
        type: 'button',
        async onclick(event) {
          event.currentTarget.disabled = true;
          try {
            await app.client.cancelMessage(task.uuid);
            setNote(task.uuid, null);
            toast(`Cancelled the message from ${senderOf(task)}.`);
            load();
          } catch (err) {
            toast(describeError(err), { error: true });
            confirm.replaceWith(actions);
          }
        },
      }, 'Cancel message'));
    actions.replaceWith(confirm);
    keep.focus();
  }

  load();
  return { el: view, title: 'Schedule', focus: heading };
}

// A task whose payload the server cannot decrypt lists without its fields.
function senderOf(task) {
  return task.contactName || 'Unknown sender';
}

function lastErrorText(e) {
  if (!e) return '';
  if (typeof e === 'string') return e;
  return e.message || e.reason || e.code || JSON.stringify(e);
}

// --- form ----------------------------------------------------------------------

export function renderForm(app, params) {
  const editing = params[0] ? decodeURIComponent(params[0]) : null;
  const heading = h('h1', { tabindex: '-1' }, editing ? 'Edit scheduled message' : 'Schedule a message');
  const form = h('form.card.task-form', { novalidate: true });
  const view = h('section.view.schedule-form',
    h('div.view-header', h('div', h('a.back-link', { href: '#/schedule' }, icon('back', { size: 16 }), 'Scheduled messages'), heading)),
    form);
  const llm = settings.llm();
  const tz = localZone();

  const typeInputs = Object.entries(TYPES).map(([value, t]) => h('label.choice',
    h('input', { type: 'radio', name: 'messageType', value, checked: value === 'fixed', disabled: Boolean(editing) }),
    h('span', h('strong', t.label), h('span.muted.small', t.hint))));
  const contact = h('input', { type: 'text', required: true, value: llm.contactName, maxlength: '100', autocomplete: 'off' });
  const text = h('textarea', { rows: 4, required: true, maxlength: '4000' });
  const textField = field('Message', text);
  const when = h('input', { type: 'datetime-local', required: true, value: epochToWall(Date.now() + 60 * 60 * 1000, tz) });
  const zone = h('input', { type: 'text', list: 'zone-list', value: tz, autocomplete: 'off', spellcheck: 'false' });
  const zoneList = h('datalist#zone-list', zones().map((z) => h('option', { value: z })));
  const immediate = h('input#immediate', { type: 'checkbox' });
  const repeat = h('select', Object.entries(REPEATS).map(([value, label]) => h('option', { value }, label)));
  const cron = h('input', { type: 'text', value: '0 9 * * 1-5', autocomplete: 'off', spellcheck: 'false', inputmode: 'text' });
  const cronField = field('Cron expression', cron, { hint: 'Five fields: minute hour day-of-month month day-of-week, in the time zone above; 0 9 * * 1-5 is 09:00 on weekdays. The first message goes at the time above, the next ones at the expression’s times.' });
  const errors = h('div.form-errors', { role: 'alert', tabindex: '-1' });
  const submit = h('button.button.primary', { type: 'submit' }, editing ? 'Save changes' : 'Schedule');
  const llmNote = h('p.notice.small', { role: 'note' });

  form.append(
    errors,
    h('fieldset.choices', { disabled: Boolean(editing) }, h('legend', 'What to send'), typeInputs),
    field('From', contact, { hint: 'The name the notification shows.' }),
    textField,
    llmNote,
    h('fieldset.when', h('legend', 'When'),
      h('div.row', field(editing ? 'Next time' : 'First time', when), field('Time zone', zone, { hint: 'Times and repeats follow this zone.' })),
      editing ? null : h('label.check', { for: 'immediate' }, immediate, 'Send the first one right away'),
      field('Repeat', repeat),
      cronField,
      zoneList),
    h('div.actions', submit, h('a.button', { href: '#/schedule' }, 'Cancel')));

  const type = () => form.querySelector('input[name=messageType]:checked').value;
  function refresh() {
    const t = type();
    textField.querySelector('label').textContent = t === 'fixed' ? 'Message' : 'Prompt';
    text.placeholder = t === 'fixed' ? 'Time to stretch and drink some water.'
      : t === 'auto' ? 'Check in on me: ask how my day is going, in one or two warm sentences.'
        : 'Write a short, upbeat good-morning message with one idea for the day.';
    llmNote.hidden = t === 'fixed';
    llmNote.replaceChildren(settings.llmReady(llm)
      ? `Uses ${llm.model} from your settings.`
      : h('span', 'This needs a model. ', h('a', { href: '#/settings' }, 'Add one in settings'), '.'));
    cronField.hidden = repeat.value !== 'cron';
    when.disabled = immediate.checked;
  }
  form.addEventListener('change', refresh);

  let original = null;
  async function loadTask() {
    submit.disabled = true;
    try {
      await app.ready();
      const { data } = await app.client.getMessage(editing);
      original = data.task;
      const t = original;
      form.querySelector(`input[name=messageType][value="${t.messageType}"]`)?.click();
      contact.value = t.contactName || '';
      const taskZone = t.tzId || tz;
      zone.value = taskZone;
      when.value = epochToWall(Date.parse(t.nextSendAt), taskZone);
      repeat.value = REPEATS[t.recurrenceType] ? t.recurrenceType : 'none';
      if (t.cronExpr) cron.value = t.cronExpr;
      const page = t.metadata && t.metadata.amsgPage;
      text.value = (page && page.text) || notes()[editing] || '';
      if (!text.value) text.placeholder = 'Leave empty to keep the current text';
      refresh();
    } catch (err) {
      showErrors([describeError(err)]);
    } finally {
      submit.disabled = false;
    }
  }

  function showErrors(list) {
    errors.replaceChildren(list.length ? h('div.notice.error', icon('alert'), h('div', h('p', h('strong', list.length === 1 ? 'Please fix this:' : 'Please fix these:')), h('ul', list.map((e) => h('li', e))))) : '');
    if (list.length) errors.focus();
  }

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const t = type();
    const problems = [];
    const zoneValue = zone.value.trim();
    if (!contact.value.trim()) problems.push('Enter who the message is from.');
    if (!text.value.trim() && !editing) problems.push(t === 'fixed' ? 'Write the message.' : 'Write the prompt.');
    if (!validZone(zoneValue)) problems.push(`“${zoneValue}” is not a time zone. Pick one from the list, like Europe/Paris.`);
    const at = wallToEpoch(when.value, validZone(zoneValue) ? zoneValue : tz);
    if (!immediate.checked && !(at > Date.now())) problems.push('Pick a time in the future.');
    if (repeat.value === 'cron' && cron.value.trim().split(/\s+/).length !== 5) problems.push('A cron expression has five fields.');
    if (t !== 'fixed' && !settings.llmReady(llm)) problems.push('Add a model in settings first.');
    showErrors(problems);
    if (problems.length) return;

    const body = { contactName: contact.value.trim(), recurrenceType: repeat.value, tzId: zoneValue };
    if (repeat.value === 'cron') body.cronExpr = cron.value.trim();
    const message = text.value.trim();
    if (message) {
      if (t === 'fixed') body.userMessage = message;
      else body.completePrompt = message;
    }
    submit.disabled = true;
    try {
      if (editing) {
        body.nextSendAt = new Date(at).toISOString();
        if (message) body.metadata = { ...((original && original.metadata) || {}), amsgPage: { text: message } };
        await app.client.updateMessage(editing, body);
        if (message) setNote(editing, message);
        toast('Saved.');
      } else {
        Object.assign(body, { messageType: t, metadata: { amsgPage: { text: message } } });
        if (immediate.checked) body.immediate = true;
        else body.firstSendTime = new Date(at).toISOString();
        if (t !== 'fixed') Object.assign(body, { apiUrl: llm.apiUrl, apiKey: llm.apiKey, primaryModel: llm.model });
        const { data } = await app.client.scheduleMessage(body);
        setNote(data.uuid, message);
        toast(immediate.checked ? 'Sending now.' : `Scheduled for ${formatDateTime(Date.parse(data.nextSendAt) || at, zoneValue)}.`);
      }
      location.hash = '#/schedule';
    } catch (err) {
      showErrors([describeError(err) + (errorDetail(err) ? ` (${errorDetail(err)})` : '')]);
    } finally {
      submit.disabled = false;
    }
  });

  refresh();
  if (editing) loadTask();
  return { el: view, title: editing ? 'Edit message' : 'New message', focus: heading };
}
