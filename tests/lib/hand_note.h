/*
 * hand_note.h -- one stapsdt note written by hand, in the layout sys/sdt.h
 * writes, for test programs that need a note sys/sdt.h would not write:
 * argument operands of a form chosen (tests/exporter/arg_forms.c), a
 * "semaphore" that lies about where it is (tests/security/tool/lying_notes.c).
 *
 * HAND_NOTE(PROVIDER, NAME, SEM, ARGS) is assembler text for the site at
 * the local label 990, which the asm holding it defines just before:
 * PROVIDER and NAME are bare words, SEM an assembler expression (0: none),
 * ARGS the argument string ("8@%0 -4@%1": operands of that asm).
 */
#ifndef HAND_NOTE_H
#define HAND_NOTE_H

#define HAND_NOTE(PROVIDER, NAME, SEM, ARGS) \
  ".ifndef _.stapsdt.base\n" \
  ".pushsection .stapsdt.base,\"aG\",\"progbits\",.stapsdt.base,comdat\n" \
  ".weak _.stapsdt.base\n" \
  ".hidden _.stapsdt.base\n" \
  "_.stapsdt.base: .space 1\n" \
  ".size _.stapsdt.base, 1\n" \
  ".popsection\n" \
  ".endif\n" \
  ".pushsection .note.stapsdt,\"?\",\"note\"\n" \
  ".balign 4\n" \
  ".4byte 992f-991f, 994f-993f, 3\n" \
  "991: .asciz \"stapsdt\"\n" \
  "992: .balign 4\n" \
  "993: .8byte 990b\n" \
  ".8byte _.stapsdt.base\n" \
  ".8byte " #SEM "\n" \
  ".asciz \"" #PROVIDER "\"\n" \
  ".asciz \"" #NAME "\"\n" \
  ".asciz \"" ARGS "\"\n" \
  "994: .balign 4\n" \
  ".popsection\n"

#endif
