// Settings: the model, the server token, the user id (copyable, or replaced
// by one from another device), the device list, and the quiet hours and
// daily limit the server keeps for the user.

import * as device from '../device.js';
import * as settings from '../settings.js';
import { copyText, describeError, field, h, icon, toast } from '../ui.js';
import { deviceList } from './devices.js';
import { quietHoursCard } from './quiet.js';

function card(id, title, description, ...children) {
  return h('section.card', { 'aria-labelledby': id }, h(`h2#${id}`, title), description ? h('p.muted', description) : null, ...children);
}

export function render(app) {
  const heading = h('h1', { tabindex: '-1' }, 'Settings');
  const llm = settings.llm();

  // Model.
  const apiUrl = h('input', { type: 'url', value: llm.apiUrl, placeholder: 'https://api.example.com/v1/chat/completions', autocomplete: 'off', spellcheck: 'false' });
  const apiKey = h('input', { type: 'password', value: llm.apiKey, autocomplete: 'off', spellcheck: 'false' });
  const showKey = h('button.button.ghost', {
    type: 'button', 'aria-pressed': 'false',
    onclick() {
      const shown = apiKey.type === 'text';
      apiKey.type = shown ? 'password' : 'text';
      showKey.setAttribute('aria-pressed', String(!shown));
      showKey.textContent = shown ? 'Show' : 'Hide';
    },
  }, 'Show');
  const model = h('input', { type: 'text', value: llm.model, placeholder: 'gpt-4o-mini', autocomplete: 'off', spellcheck: 'false' });
  const contactName = h('input', { type: 'text', value: llm.contactName, maxlength: '100', autocomplete: 'off' });
  const systemPrompt = h('textarea', { rows: 3, maxlength: '4000' }, llm.systemPrompt);
  const modelStatus = h('span.save-status', { role: 'status' });
  const modelForm = h('form', {
    onsubmit(event) {
      event.preventDefault();
      settings.setLLM({ apiUrl: apiUrl.value.trim(), apiKey: apiKey.value.trim(), model: model.value.trim(), contactName: contactName.value.trim() || 'Assistant', systemPrompt: systemPrompt.value.trim() });
      modelStatus.textContent = 'Saved';
      setTimeout(() => { modelStatus.textContent = ''; }, 3000);
    },
  },
  field('API URL', apiUrl, { hint: settings.hasOperatorModel()
    ? 'An OpenAI-compatible chat completions endpoint, or its base URL. Leave the URL, key and model empty to use this server’s own model.'
    : 'An OpenAI-compatible chat completions endpoint, or its base URL. The server calls only public hosts; for a model on your own machine see “Local models” in amsg’s README.' }),
  h('div.field', h('label', { for: 'api-key' }, 'API key'), h('div.input-row', Object.assign(apiKey, { id: 'api-key' }), showKey)),
  field('Model', model),
  field('Assistant name', contactName, { hint: 'Shown on replies and notifications.' }),
  field('Instructions (optional)', systemPrompt, { hint: 'Sent as the system message of every chat.' }),
  h('div.actions', h('button.button.primary', { type: 'submit' }, 'Save model'), modelStatus));

  // Server.
  const token = h('input', { type: 'password', value: settings.token(), autocomplete: 'off', spellcheck: 'false' });
  const tokenStatus = h('span.save-status', { role: 'status' });
  const tokenForm = h('form', {
    async onsubmit(event) {
      event.preventDefault();
      app.setToken(token.value);
      tokenStatus.textContent = 'Saved';
      list.refresh();
    },
  }, field('Access token', token, { hint: 'Only if your server sets AMSG_CLIENT_TOKEN. Sent as X-Client-Token.' }),
  h('div.actions', h('button.button.primary', { type: 'submit' }, 'Save token'), tokenStatus));

  // Identity.
  const userId = h('input.mono', { type: 'text', readOnly: true, value: settings.userId() });
  const other = h('input.mono', { type: 'text', placeholder: 'xxxxxxxx-xxxx-4xxx-xxxx-xxxxxxxxxxxx', autocomplete: 'off', spellcheck: 'false' });
  const identity = card('identity-heading', 'Your id',
    'Your messages, devices and scheduled messages belong to this id. To get the same notifications on another device, use this id there.',
    h('div.field', h('label', { for: 'user-id' }, 'User id'), h('div.input-row', Object.assign(userId, { id: 'user-id' }),
      h('button.button', {
        type: 'button',
        async onclick() {
          toast(await copyText(userId.value) ? 'User id copied.' : 'Copy failed: select the id and copy it yourself.');
        },
      }, icon('copy', { size: 16 }), 'Copy'))),
    h('details.use-other', h('summary', 'Use an id from another device'),
      h('form', {
        async onsubmit(event) {
          event.preventDefault();
          try {
            await app.setUserId(other.value.trim());
            userId.value = settings.userId();
            other.value = '';
            toast('This browser now uses that id.');
            list.refresh();
          } catch (err) {
            toast(describeError(err), { error: true });
          }
        },
      }, field('Id from the other device', other, { hint: 'This device is registered again under that id; this browser’s conversations stay here.' }),
      h('div.actions', h('button.button', { type: 'submit' }, 'Use this id')))));

  const list = deviceList(app, { onChange: () => app.deviceChanged() });
  const test = h('button.button', {
    type: 'button',
    async onclick() {
      test.disabled = true;
      try {
        await app.ready();
        const { data } = await app.client.testPush();
        toast(data.delivered > 0 ? 'Test notification sent.' : 'No device accepted the test notification.', { error: data.delivered === 0 });
      } catch (err) {
        toast(describeError(err), { error: true });
      } finally {
        test.disabled = false;
      }
    },
  }, icon('bell', { size: 16 }), 'Send a test notification');
  const deviceActions = h('div.actions', test,
    device.enabled() ? null : h('a.button.primary', { href: '#/welcome' }, 'Turn on notifications here'));
  list.el.append(deviceActions);

  const view = h('section.view.settings',
    h('div.view-header', heading),
    h('div.settings-grid',
      card('model-heading', 'Model', 'Stored only in this browser and sent to your server with each message.', modelForm),
      list.el,
      quietHoursCard(app, card),
      identity,
      card('server-heading', 'Server', null, tokenForm)));
  return { el: view, title: 'Settings', focus: heading };
}
