// The device list: what GET /push-subscription reports (how many devices
// receive this user's pushes, and the latest one), with this browser marked
// and a way to remove it.

import * as device from '../device.js';
import * as settings from '../settings.js';
import { describeError, errorDetail, h, icon, relativeTime, toast } from '../ui.js';

/** A short name for this browser, e.g. "Chrome on Linux". */
export function browserName(ua = navigator.userAgent) {
  const browser = /Edg\//.test(ua) ? 'Edge' : /Firefox\//.test(ua) ? 'Firefox' : /Chrom(e|ium)\//.test(ua) ? 'Chrome'
    : /Safari\//.test(ua) ? 'Safari' : 'This browser';
  const os = /Android/.test(ua) ? 'Android' : /iPhone|iPad|iPod/.test(ua) ? 'iOS' : /Mac OS X/.test(ua) ? 'macOS'
    : /Windows/.test(ua) ? 'Windows' : /Linux/.test(ua) ? 'Linux' : '';
  return os ? `${browser} on ${os}` : browser;
}

function hostOf(endpoint) {
  try {
    return new URL(endpoint).host;
  } catch {
    return '';
  }
}

/**
 * Renders the list into a section and returns it; refresh() reloads it.
 * onChange runs after this device was removed.
 */
export function deviceList(app, { onChange = () => {}, headingLevel = 2 } = {}) {
  const body = h('div.device-body', { 'aria-live': 'polite' });
  const section = h('section.card.devices', { 'aria-labelledby': 'devices-heading' },
    h(`h${headingLevel}#devices-heading`, 'Devices'), body);

  async function refresh() {
    body.replaceChildren(h('p.muted', 'Loading devices…'));
    let data;
    try {
      await app.ready();
      ({ data } = await app.client.getSubscription());
    } catch (err) {
      body.replaceChildren(h('p.error-text', { role: 'alert' }, describeError(err)), h('p.muted.small', errorDetail(err)));
      return;
    }
    const mine = settings.device();
    const count = Number.isInteger(data.devices) ? data.devices : data.exists ? 1 : 0;
    const rows = [];
    if (mine) {
      rows.push(h('li.device.this-device',
        h('span.device-icon', icon('device')),
        h('div.device-text',
          h('strong', browserName()), h('span.badge.ok', 'This device'),
          h('span.muted.small', `${hostOf(mine.endpoint)} · registered ${relativeTime(mine.registeredAt)}`)),
        h('button.button.ghost.danger', { type: 'button', onclick: remove }, icon('trash'), 'Remove')));
    }
    if (data.exists && (!mine || data.endpoint !== mine.endpoint)) {
      rows.push(h('li.device',
        h('span.device-icon', icon('device')),
        h('div.device-text', h('strong', 'Most recent device'),
          h('span.muted.small', `${hostOf(data.endpoint)}${data.updatedAt ? ` · updated ${relativeTime(Date.parse(data.updatedAt) || data.updatedAt)}` : ''}`))));
    }
    const summary = count === 0 ? 'No device receives notifications yet.'
      : count === 1 ? 'One device receives your notifications.' : `${count} devices receive your notifications.`;
    body.replaceChildren(...[h('p.device-count', summary), rows.length ? h('ul.device-list', rows) : null].filter(Boolean));
  }

  async function remove(event) {
    const button = event.currentTarget;
    button.disabled = true;
    try {
      await device.unregister(app.client);
      toast('This device will no longer receive notifications.');
      onChange();
    } catch (err) {
      toast(describeError(err), { error: true });
    } finally {
      button.disabled = false;
      refresh();
    }
  }

  refresh();
  return { el: section, refresh };
}
