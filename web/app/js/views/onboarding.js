// Onboarding: say why notifications matter, then ask, subscribe and register
// this device, showing each step; end on the device list.

import * as device from '../device.js';
import * as settings from '../settings.js';
import { describeError, errorDetail, glyph, h, icon } from '../ui.js';
import { deviceList } from './devices.js';

const STEPS = [
  ['permission', 'Allow notifications'],
  ['subscribe', 'Create a push subscription'],
  ['register', 'Register this device with your server'],
];

export function render(app) {
  const heading = h('h1#onboarding-title', { tabindex: '-1' }, 'Messages that reach you');
  const card = h('div.onboarding-card');
  const view = h('section.view.onboarding', { 'aria-labelledby': 'onboarding-title' },
    h('div.onboarding-hero', glyph(), h('div', heading,
      h('p.lead', 'amsg sends replies, reminders and check-ins from your own server as notifications, even when this page is closed.'))),
    card);

  function intro() {
    const support = device.support();
    if (support !== 'ok') {
      const text = {
        'ios-install': 'On iPhone and iPad, notifications work once amsg is on your Home Screen: tap Share, then “Add to Home Screen”, and open it from there.',
        insecure: 'Notifications need a secure connection. Open amsg over HTTPS (or on localhost).',
        unsupported: 'This browser cannot receive Web Push notifications. Try a current Chrome, Edge, Firefox or Safari.',
      }[support];
      card.replaceChildren(h('div.notice.warn', { role: 'note' }, icon('alert'), h('p', text)));
      return;
    }
    if (device.permission() === 'denied') {
      card.replaceChildren(
        h('div.notice.warn', { role: 'note' }, icon('alert'),
          h('div', h('p', h('strong', 'Notifications are blocked for this site.')),
            h('p', 'Open the site settings (the icon left of the address), allow Notifications, then reload this page.'))),
        h('div.actions', h('button.button', { type: 'button', onclick: () => location.reload() }, 'Reload')));
      return;
    }
    card.replaceChildren(
      h('ul.reasons',
        h('li', icon('chat'), h('div', h('strong', 'Replies while you are away'), h('p', 'Ask something, close the tab, and the answer still finds you.'))),
        h('li', icon('clock'), h('div', h('strong', 'Reminders on time'), h('p', 'Messages you schedule arrive to the second, once or on repeat.'))),
        h('li', icon('bell'), h('div', h('strong', 'Only what you set up'), h('p', 'Your server sends nothing you did not ask for. You can remove this device at any time.')))),
      h('p.muted.small', 'Your browser will ask for permission next.'),
      h('div.actions', h('button.button.primary#enable', { type: 'button', onclick: start }, icon('bell'), 'Turn on notifications')));
  }

  function stepper(state) {
    return h('ol.steps', STEPS.map(([key, label]) => {
      const s = state[key] || 'todo';
      return h(`li.step.${s}`, { 'aria-current': s === 'active' ? 'step' : false },
        h('span.step-mark', s === 'done' ? icon('check', { size: 16 }) : ''),
        h('span', label),
        h('span.visually-hidden', { done: ' (done)', active: ' (in progress)', failed: ' (failed)', todo: '' }[s]));
    }));
  }

  async function start() {
    const state = { permission: 'active' };
    const status = h('p.status', { role: 'status' }, 'Waiting for your answer…');
    const show = () => card.replaceChildren(stepper(state), status);
    show();
    try {
      const answer = await Notification.requestPermission();
      if (answer !== 'granted') {
        intro();
        if (answer === 'default') card.prepend(h('p.notice', { role: 'status' }, 'Permission was not given. You can try again whenever you like.'));
        return;
      }
      state.permission = 'done';
      state.subscribe = 'active';
      status.textContent = 'Subscribing…';
      show();
      await app.ready();
      await device.register(app.client, {
        onStep(step) {
          if (step === 'register') {
            state.subscribe = 'done';
            state.register = 'active';
            status.textContent = 'Registering this device…';
            show();
          }
        },
      });
      state.register = 'done';
      show();
      finished = true;
      done();
    } catch (err) {
      for (const key of Object.keys(state)) if (state[key] === 'active') state[key] = 'failed';
      card.replaceChildren(stepper(state), failure(err));
    }
  }

  function failure(err) {
    const parts = [h('div.notice.error', { role: 'alert' }, icon('alert'),
      h('div', h('p', describeError(err)), errorDetail(err) ? h('p.small.muted', errorDetail(err)) : null))];
    if (err && err.code === 'INVALID_CLIENT_TOKEN') {
      const input = h('input#onboarding-token', { type: 'password', autocomplete: 'off', value: settings.token() });
      parts.push(h('form.inline-form', {
        onsubmit(event) {
          event.preventDefault();
          app.setToken(input.value);
          start();
        },
      }, h('label', { for: 'onboarding-token' }, 'Server access token'), input, h('button.button.primary', { type: 'submit' }, 'Save and retry')));
    } else {
      parts.push(h('div.actions', h('button.button.primary', { type: 'button', onclick: start }, 'Try again')));
    }
    return h('div', parts);
  }

  function done() {
    app.deviceChanged();
    const list = deviceList(app, { onChange: () => { app.deviceChanged(); intro(); }, headingLevel: 2 });
    card.replaceChildren(
      h('div.notice.ok', { role: 'status' }, icon('check'), h('p', h('strong', 'This device is ready.'), ' Notifications from your server will appear here.')),
      list.el,
      h('div.actions', h('a.button.primary', { href: '#/chat' }, icon('chat'), 'Start a conversation'),
        h('a.button', { href: '#/schedule/new' }, icon('clock'), 'Schedule a message')));
  }

  // The start-up registration may finish while this view is open.
  let finished = false;
  const onSettings = () => {
    if (!finished && device.enabled() && !card.querySelector('.steps')) {
      finished = true;
      done();
    }
  };
  addEventListener('amsg:settings', onSettings);
  if (device.enabled()) {
    finished = true;
    done();
  } else {
    intro();
  }
  return { el: view, title: 'Notifications', focus: heading, destroy: () => removeEventListener('amsg:settings', onSettings) };
}
