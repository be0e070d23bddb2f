// amsg operator page: reads the admin API with the operator token, which it
// keeps in sessionStorage (this tab only). Plain module, no build step.

const TOKEN_KEY = 'amsg-admin-token';
const OUTCOMES = ['delivered', 'retry', 'gone', 'unknown_subscription', 'too_large', 'config_error', 'failed'];
const OUTCOME_LABELS = { delivered: 'Delivered', retry: 'Retried', gone: 'Gone (device removed)', unknown_subscription: 'Unknown subscription', too_large: 'Too large', config_error: 'Configuration error', failed: 'Failed' };
const SVG = 'http://www.w3.org/2000/svg';

const $ = (id) => document.getElementById(id);

class ApiError extends Error {
  constructor(code, message, status) { super(message); this.code = code; this.status = status; }
}

function token() { return sessionStorage.getItem(TOKEN_KEY) || ''; }

async function api(method, path, body) {
  const init = { method, headers: { Authorization: `Bearer ${token()}` } };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const response = await fetch(`/api/v1/admin/${path}`, init);
  let envelope = null;
  try { envelope = await response.json(); } catch { /* not JSON: reported below */ }
  if (!envelope || !envelope.success) {
    const error = (envelope && envelope.error) || {};
    throw new ApiError(error.code || `HTTP_${response.status}`, error.message || `Request failed (${response.status})`, response.status);
  }
  return envelope.data;
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') node.className = v;
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c ?? '')));
  return node;
}

function svg(tag, attrs = {}) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  return node;
}

const clockFormat = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });
const dayFormat = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
// when shows a time of today as a clock time, any other with its day.
function when(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  return (d.toDateString() === new Date().toDateString() ? clockFormat : dayFormat).format(d);
}
function shortId(id) { return id.length > 13 ? `${id.slice(0, 8)}…${id.slice(-4)}` : id; }

function setStatus(text) { $('status').textContent = text; }

function fillTable(table, rows, emptyText, columns) {
  const body = table.tBodies[0];
  body.replaceChildren();
  if (!rows.length) {
    body.append(el('tr', { class: 'empty' }, el('td', { colspan: String(columns) }, emptyText)));
    return;
  }
  // Each cell carries its column's name, which the phone layout shows
  // beside the value when the table folds into one block per row.
  const labels = [...table.tHead.rows[0].cells].map((th) => th.textContent.trim());
  for (const row of rows) {
    [...row.cells].forEach((td, i) => { if (labels[i]) td.dataset.label = labels[i]; });
    body.append(row);
  }
}

// The chart: one stacked bar per minute that saw attempts. Its window runs
// from the first minute with attempts (at least an hour back) to now, so a
// fresh server's few minutes fill the chart instead of a sliver of the day.
const MIN_WINDOW_MINUTES = 60;
function renderChart(data) {
  const width = 1440;
  const height = 150;
  const plot = height;
  const end = Date.parse(data.since) + 24 * 3600 * 1000;
  const totals = Object.fromEntries(OUTCOMES.map((o) => [o, 0]));
  let peak = 1;
  let first = end - MIN_WINDOW_MINUTES * 60000;
  for (const m of data.minutes) {
    let sum = 0;
    for (const [o, n] of Object.entries(m.outcomes)) { sum += n; totals[o] = (totals[o] || 0) + n; }
    peak = Math.max(peak, sum);
    first = Math.min(first, Date.parse(m.minute));
  }
  const start = Math.max(Date.parse(data.since), first);
  const minutes = Math.ceil((end - start) / 60000);
  const perMinute = width / minutes;
  const barWidth = Math.max(2, perMinute - (perMinute > 4 ? 1 : 0));
  const chart = svg('svg', { viewBox: `0 0 ${width} ${height}`, preserveAspectRatio: 'none', role: 'img' });
  const all = Object.values(totals).reduce((a, b) => a + b, 0);
  chart.setAttribute('aria-label', `Push attempts per minute over the last ${ago(minutes)}: ${all} in all, at most ${peak} in one minute.`);
  chart.append(svg('line', { class: 'axis', x1: 0, x2: width, y1: plot + 0.5, y2: plot + 0.5 }));
  for (let q = 1; q < 4; q++) chart.append(svg('line', { class: 'grid-line', x1: (q * width) / 4, x2: (q * width) / 4, y1: 0, y2: plot }));
  for (const m of data.minutes) {
    const x = ((Date.parse(m.minute) - start) / 60000) * perMinute;
    let y = plot;
    for (const o of OUTCOMES) {
      const n = m.outcomes[o];
      if (!n) continue;
      const h = Math.max(2, (n / peak) * (plot - 4));
      y -= h;
      chart.append(svg('rect', { class: `o-${o}`, x: Math.max(0, Math.min(x, width - barWidth)), y, width: barWidth, height: h }));
    }
  }
  const ticks = [4, 3, 2, 1].map((q) => `${ago((q * minutes) / 4)} ago`).concat('now');
  const axis = el('div', { class: 'chart-axis', 'aria-hidden': 'true' }, ...ticks.map((t) => el('span', {}, t)));
  $('chart').replaceChildren(chart, axis);
  $('chart-title').textContent = `Push attempts per minute, last ${ago(minutes)}`;
  $('legend').replaceChildren(...OUTCOMES.map((o) => el('li', {}, el('span', { class: `swatch o-${o}`, 'aria-hidden': 'true' }), `${OUTCOME_LABELS[o]}: ${totals[o] || 0}`)));
  const failed = all - (totals.delivered || 0);
  $('totals').textContent = all ? `${all} attempts, ${failed} not delivered, busiest minute ${peak}.` : 'No push attempts in the last 24 hours.';
}

// ago says a number of minutes as minutes or hours.
function ago(minutes) {
  return minutes < 120 ? `${Math.round(minutes)} min` : `${Math.round(minutes / 60)} h`;
}

// groupAttempts folds the failed attempts of one push to one device (its
// retries) into one entry: the newest attempt, with the count and the time
// of the first. The API lists attempts newest first.
function groupAttempts(attempts) {
  const groups = new Map();
  for (const a of attempts) {
    const key = `${a.messageId}\u0000${a.deviceId}`;
    const g = groups.get(key);
    if (g) { g.tries += 1; g.firstAt = a.at; } else groups.set(key, { ...a, tries: 1, firstAt: a.at });
  }
  return [...groups.values()];
}

// renderFailed shows the ten newest failed pushes, each with its retries
// folded in, and all of them on request.
function renderFailed(data, all = false) {
  const pushes = groupAttempts(data.attempts);
  const shown = all ? pushes : pushes.slice(0, 10);
  fillTable($('failed'), shown.map((a) => el('tr', {},
    el('td', { class: 'nowrap', title: a.tries > 1 ? `first ${when(a.firstAt)}` : '' }, when(a.at)),
    el('td', { class: 'id short', title: a.userId }, shortId(a.userId)),
    el('td', {}, a.pushHost || '—'),
    el('td', {}, el('span', { class: 'pill' }, a.status ? `${a.outcome} ${a.status}` : a.outcome), a.tries > 1 ? ` ${a.tries} tries` : ''),
    el('td', { class: 'err' }, a.error || ''))), 'No failed deliveries in the last 24 hours.', 5);
  const more = $('failed-more');
  more.hidden = shown.length === pushes.length;
  more.textContent = `Show all ${pushes.length}`;
  more.onclick = () => renderFailed(data, true);
}

async function showDevices(userId) {
  const box = $('devices');
  box.hidden = false;
  box.replaceChildren(el('p', { class: 'muted' }, 'Loading devices…'));
  try {
    const data = await api('GET', `users/${encodeURIComponent(userId)}/devices`);
    const list = data.devices.map((d) => el('li', {}, `${d.pushHost} — registered ${when(d.createdAt)}, last seen ${when(d.lastSeenAt)}`));
    box.replaceChildren(el('h3', {}, `Devices of ${userId}`), list.length ? el('ul', {}, ...list) : el('p', { class: 'muted' }, 'No devices: notifications are off for this user.'));
  } catch (err) {
    box.replaceChildren(el('p', { class: 'error' }, err.message));
  }
}

async function deleteUser(userId) {
  if (!confirm(`Delete user ${userId} and everything stored for them (devices, tasks, state, history)?`)) return;
  try {
    const data = await api('DELETE', `users/${encodeURIComponent(userId)}`);
    const d = data.deleted;
    setStatus(`Deleted ${userId}: ${d.devices} devices, ${d.tasks} tasks, ${d.sessions} sessions.`);
    $('devices').hidden = true;
    await refresh();
  } catch (err) {
    setStatus(err.message);
  }
}

function renderUsers(data) {
  fillTable($('users'), data.users.map((u) => el('tr', {},
    el('td', { class: 'id' }, u.userId),
    el('td', { class: 'num' }, u.devices),
    el('td', { class: 'num' }, u.pendingTasks),
    el('td', { class: 'nowrap' }, when(u.lastSeen)),
    el('td', { class: 'actions' },
      el('button', { type: 'button', class: 'ghost small', onclick: () => showDevices(u.userId), 'aria-label': `Devices of ${u.userId}` }, 'Devices'),
      el('button', { type: 'button', class: 'ghost small', onclick: () => { $('send-user').value = u.userId; $('send-message').focus(); }, 'aria-label': `Send to ${u.userId}` }, 'Send'),
      el('button', { type: 'button', class: 'danger small', onclick: () => deleteUser(u.userId), 'aria-label': `Delete ${u.userId}` }, 'Delete')))),
  'No users yet.', 5);
}

// The daily chart of messages (issue 25): per UTC day, one bar each for
// sent, shown and clicked, on one scale.
const DAY_TYPES = ['sent', 'shown', 'clicked'];
const DAY_LABELS = { sent: 'Sent', shown: 'Shown', clicked: 'Clicked' };
function renderDays(data) {
  const width = 1440;
  const height = 150;
  const days = data.days;
  const totals = Object.fromEntries(DAY_TYPES.map((k) => [k, 0]));
  let peak = 1;
  for (const d of days) for (const k of DAY_TYPES) { totals[k] += d.counts[k] || 0; peak = Math.max(peak, d.counts[k] || 0); }
  const chart = svg('svg', { viewBox: `0 0 ${width} ${height}`, preserveAspectRatio: 'none', role: 'img' });
  chart.setAttribute('aria-label', `Messages per day since ${data.since.slice(0, 10)}: ${DAY_TYPES.map((k) => `${totals[k]} ${k}`).join(', ')}.`);
  chart.append(svg('line', { class: 'axis', x1: 0, x2: width, y1: height + 0.5, y2: height + 0.5 }));
  const slot = width / Math.max(days.length, 7);
  const bar = Math.max(2, (slot - 8) / DAY_TYPES.length);
  days.forEach((d, i) => DAY_TYPES.forEach((k, j) => {
    const n = d.counts[k] || 0;
    if (!n) return;
    const h = Math.max(2, (n / peak) * (height - 4));
    chart.append(svg('rect', { class: `e-${k}`, x: i * slot + 4 + j * bar, y: height - h, width: bar, height: h }));
  }));
  const axis = el('div', { class: 'chart-axis', 'aria-hidden': 'true' }, ...days.map((d) => el('span', {}, d.day.slice(5))));
  $('days-chart').replaceChildren(chart, axis);
  $('days-legend').replaceChildren(...DAY_TYPES.map((k) => el('li', {}, el('span', { class: `swatch e-${k}`, 'aria-hidden': 'true' }), `${DAY_LABELS[k]}: ${totals[k]}`)));
}

async function showTimeline(userId, messageId) {
  const result = $('timeline-result');
  result.className = 'result';
  result.textContent = 'Loading…';
  try {
    const data = await api('GET', `messages/${encodeURIComponent(messageId)}/timeline?userId=${encodeURIComponent(userId)}`);
    result.textContent = `${data.events.length} events; now ${data.status}.`;
    $('timeline').hidden = false;
    fillTable($('timeline'), data.events.map((e) => el('tr', {},
      el('td', { class: 'nowrap' }, when(e.at)),
      el('td', {}, el('span', { class: 'pill' }, e.type)),
      el('td', { class: 'num' }, e.deviceId || '—'),
      el('td', { class: 'err' }, e.detail ? JSON.stringify(e.detail) : ''))), 'No events.', 4);
  } catch (err) {
    $('timeline').hidden = true;
    result.className = 'result bad';
    result.textContent = err.message;
  }
}

function renderTasks(data) {
  fillTable($('tasks'), data.tasks.map((t) => el('tr', {},
    el('td', {}, t.contactName || '—'),
    el('td', {}, t.messageType),
    el('td', {}, el('span', { class: 'pill' }, t.status)),
    el('td', { class: 'nowrap' }, when(t.nextSendAt)),
    el('td', { class: 'id short', title: t.userId }, shortId(t.userId)),
    el('td', { class: 'num' }, t.retryCount))), 'No tasks.', 6);
}

// The webhook endpoints, each with the deliveries still to go and those
// given up after the retry window, and why the last one was.
function renderWebhooks(data) {
  fillTable($('webhooks'), data.webhooks.map((h) => el('tr', {},
    el('td', { class: 'id', title: h.webhookId }, h.url, h.source === 'env' ? el('span', { class: 'muted' }, ' (AMSG_WEBHOOK_URL)') : ''),
    el('td', {}, h.events.join(', ')),
    el('td', { class: 'num' }, h.pending),
    el('td', { class: 'num' }, h.failed),
    el('td', {}, h.lastFailure ? `${when(h.lastFailure.at)}: ${h.lastFailure.lastError} (${h.lastFailure.attempts} tries)` : '—'))),
  'No webhook endpoints.', 5);
}

async function refresh() {
  setStatus('Loading…');
  try {
    const [perMinute, failed, users, tasks, days] = await Promise.all([
      api('GET', 'deliveries/per-minute?hours=24'), api('GET', 'deliveries/failed?hours=24'),
      api('GET', 'users?limit=200'), api('GET', 'tasks?limit=200'), api('GET', 'messages/per-day?days=14')]);
    renderChart(perMinute);
    renderDays(days);
    renderFailed(failed);
    renderUsers(users);
    renderTasks(tasks);
    renderWebhooks(await api('GET', 'webhooks'));
    setStatus(`Updated ${new Intl.DateTimeFormat(undefined, { timeStyle: 'short' }).format(new Date())}`);
  } catch (err) {
    if (err.status === 401 || err.status === 404) return signOut(err.status === 404
      ? 'This server has no operator token set (AMSG_ADMIN_TOKEN).' : 'That token was not accepted.');
    setStatus(err.message);
  }
}

function showDashboard() {
  $('signin').hidden = true;
  $('dashboard').hidden = false;
  $('sign-out').hidden = false;
  refresh();
}

function signOut(message = '') {
  sessionStorage.removeItem(TOKEN_KEY);
  $('dashboard').hidden = true;
  $('sign-out').hidden = true;
  $('signin').hidden = false;
  $('signin-error').textContent = message;
  setStatus('');
  $('token').focus();
}

// Signing in checks the token with one small read before showing anything.
$('signin-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  sessionStorage.setItem(TOKEN_KEY, $('token').value.trim());
  $('signin-error').textContent = '';
  try {
    await api('GET', 'users?limit=1');
  } catch (err) {
    return signOut(err.status === 401 ? 'That token was not accepted.'
      : err.status === 404 ? 'This server has no operator token set (AMSG_ADMIN_TOKEN).' : err.message);
  }
  $('token').value = '';
  showDashboard();
});
$('sign-out').addEventListener('click', () => signOut());
$('timeline-form').addEventListener('submit', (event) => {
  event.preventDefault();
  showTimeline($('timeline-user').value.trim(), $('timeline-message').value.trim());
});
$('refresh').addEventListener('click', () => refresh());
$('send-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const result = $('send-result');
  result.className = 'result';
  result.textContent = 'Sending…';
  const body = { userId: $('send-user').value.trim(), message: $('send-message').value };
  const title = $('send-title-input').value.trim();
  if (title) body.title = title;
  try {
    const data = await api('POST', 'send', body);
    const outcomes = data.devices.map((d) => `${d.pushHost}: ${d.outcome}`).join(', ');
    result.textContent = `${data.delivered ? 'Delivered' : 'Not delivered'} (${data.messageId}). ${outcomes}`;
    if (!data.delivered) result.className = 'result bad';
    if (data.delivered) $('send-message').value = '';
    refresh();
  } catch (err) {
    result.className = 'result bad';
    result.textContent = err.message;
  }
});

if (token()) showDashboard(); else signOut();
