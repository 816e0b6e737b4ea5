/** Recognises a repository's license from its LICENSE text (as an SPDX id) or from package metadata. */

const RULES: { id: string; test: RegExp[] }[] = [
  { id: 'Apache-2.0', test: [/Apache License/i, /Version 2\.0/i] },
  { id: 'MIT', test: [/Permission is hereby granted, free of charge/i] },
  {
    id: 'BSD-3-Clause',
    test: [/Redistribution and use in source and binary forms/i, /(Neither the name|names of its\s+contributors)/i],
  },
  { id: 'BSD-2-Clause', test: [/Redistribution and use in source and binary forms/i] },
  { id: 'GPL-3.0', test: [/GNU GENERAL PUBLIC LICENSE/i, /Version 3/i] },
  { id: 'GPL-2.0', test: [/GNU GENERAL PUBLIC LICENSE/i, /Version 2/i] },
  { id: 'LGPL-3.0', test: [/GNU LESSER GENERAL PUBLIC LICENSE/i] },
  { id: 'MPL-2.0', test: [/Mozilla Public License/i, /2\.0/] },
  { id: 'CC-BY-NC-4.0', test: [/Attribution-NonCommercial 4\.0/i] },
  { id: 'Unlicense', test: [/This is free and unencumbered software/i] },
];

/** The SPDX id of a license text, or undefined when none matches. */
export function detectLicense(text: string): string | undefined {
  return RULES.find((r) => r.test.every((re) => re.test(text)))?.id;
}

export const LICENSE_FILES = ['LICENSE', 'LICENSE.txt', 'LICENSE.md', 'LICENCE', 'COPYING', 'LICENSE.rst'];
