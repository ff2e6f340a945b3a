#!/usr/bin/env node
import { main } from '@kemu/cni';
import { portmap } from './portmap.js';

void main(portmap);
