// The request and response encryption of amsg-client (AES-256-GCM, 12-byte
// IV, detached 16-byte tag, standard padded base64), byte for byte.

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function hexToBytes(hex) {
  if (typeof hex !== 'string' || !/^(?:[0-9a-f]{2})*$/i.test(hex)) throw new TypeError('not a hex string');
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return bytes;
}

export function bytesToBase64(bytes) {
  let binary = '';
  for (let i = 0; i < bytes.length; i++) binary += String.fromCharCode(bytes[i]);
  return btoa(binary);
}

/** Decodes standard or url-safe base64, padded or not. */
export function base64ToBytes(text) {
  const bare = String(text).replace(/=+$/, '').replace(/-/g, '+').replace(/_/g, '/');
  const binary = atob(bare + '==='.slice((bare.length + 3) % 4));
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

const keys = new Map(); // user key hex → Promise<CryptoKey>

function importKey(userKeyHex) {
  let key = keys.get(userKeyHex);
  if (!key) {
    key = crypto.subtle.importKey('raw', hexToBytes(userKeyHex), 'AES-GCM', false, ['encrypt', 'decrypt']);
    keys.set(userKeyHex, key);
  }
  return key;
}

/** Seals JSON.stringify(value) into {iv, authTag, encryptedData}. */
export async function seal(userKeyHex, value, iv = crypto.getRandomValues(new Uint8Array(12))) {
  const key = await importKey(userKeyHex);
  const sealed = new Uint8Array(await crypto.subtle.encrypt({ name: 'AES-GCM', iv }, key, encoder.encode(JSON.stringify(value))));
  return {
    iv: bytesToBase64(iv),
    authTag: bytesToBase64(sealed.slice(sealed.length - 16)),
    encryptedData: bytesToBase64(sealed.slice(0, sealed.length - 16)),
  };
}

/** Opens an envelope and parses the JSON inside. */
export async function open(userKeyHex, envelope) {
  const key = await importKey(userKeyHex);
  const tag = base64ToBytes(envelope.authTag);
  const data = base64ToBytes(envelope.encryptedData);
  const joined = new Uint8Array(data.length + tag.length);
  joined.set(data);
  joined.set(tag, data.length);
  const plain = await crypto.subtle.decrypt({ name: 'AES-GCM', iv: base64ToBytes(envelope.iv), tagLength: tag.length * 8 }, key, joined);
  return JSON.parse(decoder.decode(plain));
}
