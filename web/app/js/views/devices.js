// The device list: every device that receives this user's pushes (GET
// /devices, amsg's own), when each was last seen (registered, opened, or a
// push its worker reported) and a button to remove each. This browser is
// marked; the server forgets a device silent for too long.

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

/** What kind of device a push service serves, by its host. */
function deviceKind(host) {
  if (/(^|\.)push\.apple\.com$/.test(host)) return 'An Apple device';
  if (/(^|\.)googleapis\.com$/.test(host)) return 'A Chrome or Android device';
  if (/(^|\.)mozilla\.com$/.test(host)) return 'A Firefox device';
  if (/(^|\.)notify\.windows\.com$/.test(host)) return 'An Edge device';
  return 'Another device';
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
    let devices;
    try {
      await app.ready();
      ({ data: { devices } } = await app.client.devices());
    } catch (err) {
      body.replaceChildren(h('p.error-text', { role: 'alert' }, describeError(err)), h('p.muted.small', errorDetail(err)));
      return;
    }
    const mine = settings.device();
    // The list names devices by id and push service host, never by endpoint.
    const isMine = (d) => Boolean(mine) && d.deviceId === mine.deviceId;
    // This browser first, then the others as the server lists them (most recently updated first).
    const ordered = [...devices.filter(isMine), ...devices.filter((d) => !isMine(d))];
    const rows = ordered.map((d) => {
      const here = isMine(d);
      const seen = `last seen ${relativeTime(d.lastSeenAt)}`;
      return h(here ? 'li.device.this-device' : 'li.device', { 'data-device-id': String(d.deviceId) },
        h('span.device-icon', icon('device')),
        h('div.device-text',
          h('strong', here ? browserName() : deviceKind(d.pushHost)),
          here ? h('span.badge.ok', 'This device') : null,
          h('span.muted.small.device-seen', `${d.pushHost} · ${seen} · registered ${relativeTime(d.createdAt)}`)),
        h('button.button.ghost.danger', { type: 'button', 'aria-label': here ? 'Remove this device' : `Remove the device on ${d.pushHost}`,
          onclick: (event) => remove(event, here ? null : d) }, icon('trash'), 'Remove'));
    });
    const count = devices.length;
    const summary = count === 0 ? 'No device receives notifications yet.'
      : count === 1 ? 'One device receives your notifications.' : `${count} devices receive your notifications.`;
    body.replaceChildren(...[h('p.device-count', summary), rows.length ? h('ul.device-list', rows) : null].filter(Boolean));
  }

  /** Removes this browser (other null) or another device of the user. */
  async function remove(event, other) {
    const button = event.currentTarget;
    button.disabled = true;
    try {
      if (other) {
        await app.client.deleteDevice(other.deviceId);
        toast('That device will no longer receive notifications.');
      } else {
        await device.unregister(app.client);
        toast('This device will no longer receive notifications.');
        onChange();
      }
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
