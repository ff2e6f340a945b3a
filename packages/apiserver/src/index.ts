// @kemu/apiserver public surface.
export * from './auth-seams.js';
