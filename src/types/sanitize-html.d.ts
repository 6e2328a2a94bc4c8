/**
 * The part of sanitize-html's interface src/service/html-sanitize.ts uses (the package ships no
 * types, and @types/sanitize-html pulls in a second htmlparser2 for nothing).
 */
declare module 'sanitize-html' {
  export interface AllowedAttribute {
    name: string;
    multiple?: boolean;
    values: string[];
  }

  export interface Options {
    allowedTags?: string[] | false;
    allowedAttributes?: Record<string, Array<string | AllowedAttribute>> | false;
    allowedSchemes?: string[];
    allowedSchemesByTag?: Record<string, string[]>;
    allowedSchemesAppliedToAttributes?: string[];
    allowProtocolRelative?: boolean;
    disallowedTagsMode?: 'discard' | 'completelyDiscard' | 'escape' | 'recursiveEscape';
    nonTextTags?: string[];
    selfClosing?: string[];
    nestingLimit?: number;
    parseStyleAttributes?: boolean;
    enforceHtmlBoundary?: boolean;
  }

  function sanitizeHtml(dirty: string, options?: Options): string;
  export default sanitizeHtml;
}
