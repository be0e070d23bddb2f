// Tools the model may call that run here, in the browser: the page declares
// them as OpenAI tools in /instant and answers tool_request pushes with their
// results through /continue.

const noParameters = { type: 'object', properties: {}, additionalProperties: false };

const tools = {
  get_current_time: {
    description: 'The current date and time on the user’s device, as ISO 8601 with its UTC offset and as local text.',
    run() {
      const now = new Date();
      return {
        iso: isoWithOffset(now),
        utc: now.toISOString(),
        local: now.toLocaleString(undefined, { dateStyle: 'full', timeStyle: 'long' }),
      };
    },
  },
  get_timezone: {
    description: 'The user’s IANA time zone, its current UTC offset and the browser locale.',
    run() {
      return {
        timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
        utcOffset: isoWithOffset(new Date()).slice(-6),
        locale: navigator.language,
      };
    },
  },
  get_battery: {
    description: 'The battery level (0–100) of the user’s device and whether it is charging.',
    available: () => typeof navigator.getBattery === 'function',
    async run() {
      const b = await navigator.getBattery();
      return {
        level: Math.round(b.level * 100),
        charging: b.charging,
        ...(Number.isFinite(b.dischargingTime) ? { minutesLeft: Math.round(b.dischargingTime / 60) } : {}),
      };
    },
  },
};

function isoWithOffset(date) {
  const offset = -date.getTimezoneOffset();
  const sign = offset >= 0 ? '+' : '-';
  const pad = (n) => String(Math.floor(Math.abs(n))).padStart(2, '0');
  const local = new Date(date.getTime() + offset * 60000).toISOString().slice(0, 19);
  return `${local}${sign}${pad(offset / 60)}:${pad(offset % 60)}`;
}

/** The OpenAI `tools` array for the tools this browser has. */
export function definitions() {
  return Object.entries(tools)
    .filter(([, t]) => !t.available || t.available())
    .map(([name, t]) => ({ type: 'function', function: { name, description: t.description, parameters: noParameters } }));
}

/** A human label for a tool name. */
export function label(name) {
  return {
    get_current_time: 'Checked the time',
    get_timezone: 'Checked the time zone',
    get_battery: 'Checked the battery',
  }[name] || `Ran ${name}`;
}

/**
 * Runs one OpenAI tool call. Resolves {ok, result} where result is what the
 * model receives (JSON text); an unknown tool or a failure is reported to the
 * model as an error object rather than thrown.
 */
export async function run(call) {
  const name = call && call.function && call.function.name;
  const tool = Object.hasOwn(tools, name) ? tools[name] : null;
  try {
    if (!tool || (tool.available && !tool.available())) throw new Error(`The tool ${name} is not available in this browser`);
    return { ok: true, result: JSON.stringify(await tool.run()) };
  } catch (err) {
    return { ok: false, result: JSON.stringify({ error: err.message || String(err) }) };
  }
}
