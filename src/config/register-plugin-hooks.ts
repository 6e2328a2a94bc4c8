/**
 * `node --import <this module>`: the plugin module hooks in a process of its own, as `groupwire
 * test-plugin` starts node's test runner (its test files then load as plugins do under `run`).
 */
import { ensurePluginModuleHooks } from './plugin-module-hooks-registration.js';

ensurePluginModuleHooks();
