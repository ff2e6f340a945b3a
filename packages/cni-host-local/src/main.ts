#!/usr/bin/env node
import { main } from '@kemu/cni';
import { hostLocal } from './host-local.js';

void main(hostLocal);
