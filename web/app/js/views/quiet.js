// Quiet hours and the daily limit: kept by the server for the user (PUT
// /preferences), so they hold for every device and for messages the server
// sends on its own. Inside quiet hours scheduled messages wait until the
// window ends; past the daily limit they reach the page but not as
// notifications.

import { describeError, field, h } from '../ui.js';
import { localZone, validZone } from '../zones.js';

/** The settings card; card(id, title, description, ...children) is the settings view's. */
export function quietHoursCard(app, card) {
  const enabled = h('input', { type: 'checkbox' });
  const start = h('input', { type: 'time', value: '22:00', required: true });
  const end = h('input', { type: 'time', value: '07:00', required: true });
  const zone = h('input', { type: 'text', value: localZone(), autocomplete: 'off', spellcheck: 'false' });
  const limit = h('input', { type: 'number', min: '0', max: '100000', step: '1', inputmode: 'numeric', placeholder: 'No limit' });
  const status = h('span.save-status', { role: 'status' });
  const sync = () => { start.disabled = end.disabled = !enabled.checked; };
  enabled.addEventListener('change', sync);
  sync();

  const form = h('form.quiet-form', {
    async onsubmit(event) {
      event.preventDefault();
      const tz = zone.value.trim();
      if (!validZone(tz)) {
        status.textContent = 'Unknown time zone';
        return;
      }
      if (enabled.checked && start.value === end.value) {
        status.textContent = 'Start and end must differ';
        return;
      }
      try {
        await app.ready();
        await app.client.putPreferences({
          timeZone: tz,
          quietHours: enabled.checked ? { start: start.value, end: end.value } : null,
          dailyLimit: limit.value === '' ? null : Number(limit.value),
        });
        status.textContent = 'Saved';
      } catch (err) {
        status.textContent = describeError(err);
      }
    },
  },
  h('div.field.checkbox', h('label', enabled, ' Hold messages during quiet hours')),
  h('div.input-row', field('From', start), field('Until', end)),
  field('Time zone', zone, { hint: 'Quiet hours and the day of the limit follow this zone.' }),
  field('Notifications per day', limit, { hint: 'Beyond it, messages still reach this page but arrive without a notification. Empty for no limit.' }),
  h('div.actions', h('button.button.primary', { type: 'submit' }, 'Save quiet hours'), status));

  (async () => {
    try {
      await app.ready();
      const { data } = await app.client.preferences();
      if (data.timeZone) zone.value = data.timeZone;
      enabled.checked = Boolean(data.quietHours);
      if (data.quietHours) {
        start.value = data.quietHours.start;
        end.value = data.quietHours.end;
      }
      limit.value = data.dailyLimit == null ? '' : String(data.dailyLimit);
      sync();
      form.dataset.loaded = 'true';
    } catch (err) {
      status.textContent = describeError(err);
    }
  })();

  return card('quiet-heading', 'Quiet hours',
    'Scheduled messages that fall in your quiet hours wait until they end, then arrive as one notification per conversation. Urgent ones (priority critical) still come through.',
    form);
}
