/**
 * What the gateway's intake checks of a file before the media store keeps it (docs/gateways.md
 * "Files"): its name and type against the deny list, and its first bytes: an image must start as one
 * (magic numbers, checked by hand: no library guesses from the rest), and an executable is known by its
 * header whatever its name says.
 */

/** How many first bytes the checks look at. */
export const HEAD_BYTES = 16;

/** Images shown inline (by the listener, and as `image: true` to relays). SVG is never one: it can run script. */
export const INLINE_IMAGE_TYPES: ReadonlySet<string> = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

/** A content type without its parameters, lower case (`Image/PNG; x=y` → `image/png`). */
export function bareType(contentType: string | undefined): string {
  if (!contentType) return '';
  const semicolon = contentType.indexOf(';');
  return (semicolon < 0 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase();
}

/** The name's ending after its last dot, lower case with the dot (`.exe`), or '' without one. */
export function extensionOf(name: string): string {
  const dot = name.lastIndexOf('.');
  return dot <= 0 || dot === name.length - 1 ? '' : name.slice(dot).toLowerCase();
}

/**
 * The deny list entry a file matches, by its name's ending (also a trailing `.exe.` or `.exe ` that
 * some systems drop), its stated type, or the type its bytes show; undefined when none.
 */
export function deniedEntry(deny: readonly string[], name: string, ...types: Array<string | undefined>): string | undefined {
  let end = name.length;
  while (end > 0 && (name[end - 1] === '.' || name[end - 1] === ' ')) end -= 1;
  const ending = extensionOf(name.slice(0, end));
  for (const entry of deny) {
    if (entry.startsWith('.')) {
      if (ending === entry) return entry;
      continue;
    }
    for (const type of types) {
      const bare = bareType(type);
      if (!bare) continue;
      if (bare === entry || (entry.endsWith('/*') && bare.startsWith(entry.slice(0, -1)))) return entry;
    }
  }
  return undefined;
}

/** Starts with `magic` at `offset`. */
function startsWith(head: Uint8Array, magic: readonly number[], offset = 0): boolean {
  if (head.length < offset + magic.length) return false;
  for (let index = 0; index < magic.length; index += 1) if (head[offset + index] !== magic[index]) return false;
  return true;
}

const ascii = (text: string) => [...text].map((char) => char.charCodeAt(0));

/** Image formats by their first bytes: the type the bytes are, whatever the platform said. */
const IMAGE_MAGIC: ReadonlyArray<{ type: string; test: (head: Uint8Array) => boolean }> = [
  { type: 'image/png', test: (h) => startsWith(h, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]) },
  { type: 'image/jpeg', test: (h) => startsWith(h, [0xff, 0xd8, 0xff]) },
  { type: 'image/gif', test: (h) => startsWith(h, ascii('GIF87a')) || startsWith(h, ascii('GIF89a')) },
  { type: 'image/webp', test: (h) => startsWith(h, ascii('RIFF')) && startsWith(h, ascii('WEBP'), 8) },
  { type: 'image/bmp', test: (h) => startsWith(h, ascii('BM')) && h.length >= 6 },
  { type: 'image/tiff', test: (h) => startsWith(h, [0x49, 0x49, 0x2a, 0x00]) || startsWith(h, [0x4d, 0x4d, 0x00, 0x2a]) },
  { type: 'image/x-icon', test: (h) => startsWith(h, [0x00, 0x00, 0x01, 0x00]) },
  // AVIF and HEIC: an ISO box `ftyp` at 4, then the brand.
  { type: 'image/avif', test: (h) => startsWith(h, ascii('ftypavi'), 4) },
  { type: 'image/heic', test: (h) => startsWith(h, ascii('ftyphei'), 4) || startsWith(h, ascii('ftypmif1'), 4) },
];

/** The image type the first bytes show, or undefined when they are no image this knows. */
export function imageTypeOf(head: Uint8Array): string | undefined {
  return IMAGE_MAGIC.find((each) => each.test(head))?.type;
}

/** The executable type the first bytes show (a PE, an ELF, a Mach-O, a script with `#!`), or undefined. */
export function executableTypeOf(head: Uint8Array): string | undefined {
  if (startsWith(head, ascii('MZ'))) return 'application/x-dosexec';
  if (startsWith(head, [0x7f, 0x45, 0x4c, 0x46])) return 'application/x-executable';
  if (startsWith(head, [0xcf, 0xfa, 0xed, 0xfe]) || startsWith(head, [0xce, 0xfa, 0xed, 0xfe])) return 'application/x-mach-binary';
  if (startsWith(head, ascii('#!'))) return 'application/x-sh';
  return undefined;
}

/** Whether a stated type claims an image (`image/*`); SVG included (it is then checked as text, never shown inline). */
export function claimsImage(contentType: string | undefined): boolean {
  return bareType(contentType).startsWith('image/');
}
