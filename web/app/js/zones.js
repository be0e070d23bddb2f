// Wall-clock times in an IANA zone, so a schedule's time means the same in
// the form as in the zone its repeats follow.

export function localZone() {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
}

export function zones() {
  try {
    return Intl.supportedValuesOf('timeZone');
  } catch {
    return [localZone()];
  }
}

export function validZone(tz) {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

function parts(ms, tz) {
  const f = new Intl.DateTimeFormat('en-US', {
    timeZone: tz, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit',
  });
  const out = {};
  for (const p of f.formatToParts(ms)) out[p.type] = Number(p.value);
  return out;
}

function offset(ms, tz) {
  const p = parts(ms, tz);
  return Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second) - Math.floor(ms / 1000) * 1000;
}

/** "2026-11-23T08:00" read as a wall-clock time in tz → epoch ms (a time in a DST gap moves forward). */
export function wallToEpoch(wall, tz) {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})/.exec(wall);
  if (!m) return NaN;
  const guess = Date.UTC(+m[1], m[2] - 1, +m[3], +m[4], +m[5]);
  const first = guess - offset(guess, tz);
  return guess - offset(first, tz);
}

/** epoch ms → "YYYY-MM-DDTHH:mm" on the wall clock of tz, for datetime-local inputs. */
export function epochToWall(ms, tz) {
  const p = parts(ms, tz);
  const pad = (n) => String(n).padStart(2, '0');
  return `${p.year}-${pad(p.month)}-${pad(p.day)}T${pad(p.hour)}:${pad(p.minute)}`;
}
