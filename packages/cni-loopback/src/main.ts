#!/usr/bin/env node
import { main } from '@kemu/cni';
import { loopback } from './loopback.js';

void main(loopback);
