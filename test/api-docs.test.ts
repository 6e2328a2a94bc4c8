import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Application, ConsoleLogger, LogLevel, TSConfigReader, TypeDocReader, type TypeDocOptions } from 'typedoc';
import { describe, expect, it } from 'vitest';

/**
 * The API reference (`npm run docs`, TypeDoc with typedoc.json): every export of the package's entry
 * points (src/index.ts, plugins/responder/index.ts) has a doc comment and every {@link} in them resolves. The check converts and validates without writing the
 * site (the conversion is what costs; types are checked by tsc, so TypeDoc skips that).
 */

const root = fileURLToPath(new URL('..', import.meta.url));

/** TypeDoc's warnings and errors, with their places, instead of on the console. */
class CollectingLogger extends ConsoleLogger {
  readonly messages: string[] = [];

  override log(message: string, level: Exclude<LogLevel, LogLevel.None>): void {
    if (level >= LogLevel.Warn) this.messages.push(message.replaceAll(root, ''));
  }
}

/** TypeDoc converting and validating as `npm run docs` does, with `options` (typedoc.json's, or a fixture's). */
async function validate(options: TypeDocOptions, readers = [new TypeDocReader(), new TSConfigReader()]): Promise<string[]> {
  const app = await Application.bootstrapWithPlugins(options, readers);
  const logger = new CollectingLogger();
  app.logger = logger;
  const project = await app.convert();
  expect(project, logger.messages.join('\n')).toBeDefined();
  app.validate(project!);
  return logger.messages;
}

describe('the API reference (npm run docs)', () => {
  it('documents every export of the entry points (groupwire, groupwire/responder), with no broken link', async () => {
    const problems = await validate({ options: `${root}typedoc.json` });
    expect(problems, `TypeDoc's validation (typedoc.json):\n${problems.join('\n')}`).toEqual([]);
  });

  it('refuses an undocumented export and a link to nothing', async () => {
    // typedoc.json's checks on a fixture of two exports (its own tsconfig: typedoc.json's would load the package).
    const { validation, requiredToBeDocumented } = JSON.parse(readFileSync(`${root}typedoc.json`, 'utf8')) as TypeDocOptions;
    const fixture = `${root}test/fixtures/api-docs/`;
    const problems = await validate(
      { entryPoints: [`${fixture}index.ts`], tsconfig: `${fixture}tsconfig.json`, skipErrorChecking: true, validation, requiredToBeDocumented },
      [new TSConfigReader()],
    );
    expect(problems).toEqual(expect.arrayContaining([
      expect.stringMatching(/undocumented.*does not have any documentation/),
      expect.stringMatching(/Failed to resolve link to "NoSuchThing" in comment for linked/),
    ]));
  });
});
