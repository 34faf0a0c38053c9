/*
 * bad_note.c -- a process a local user runs to knock the exporter over:
 * one billing invoice-create note whose first argument is an indexed
 * memory operand, "-8@(%rax,%rbx,8)".  Compilers emit that form; the probe
 * reader accepts it, libbpf's USDT support does not.  Written by hand (no
 * sys/sdt.h), so every compiler gives the same note.
 *
 *   bad_note   prints "waiting pid PID", then sleeps until its stdin closes.
 */
#include <stdio.h>
#include <unistd.h>

static void site(void)
{
	__asm__ volatile("990: nop\n"
	                 ".pushsection .note.stapsdt,\"\",\"note\"\n"
	                 ".balign 4\n"
	                 ".4byte 992f-991f, 994f-993f, 3\n"
	                 "991: .asciz \"stapsdt\"\n"
	                 "992: .balign 4\n"
	                 "993: .8byte 990b\n"
	                 ".8byte _.stapsdt.base\n"
	                 ".8byte 0\n"
	                 ".asciz \"billing\"\n"
	                 ".asciz \"invoice__create\"\n"
	                 ".asciz \"-8@(%rax,%rbx,8) 8@$1 -8@$1 8@%rdx\"\n"
	                 "994: .balign 4\n"
	                 ".popsection\n"
	                 ".ifndef _.stapsdt.base\n"
	                 ".pushsection .stapsdt.base,\"aG\",\"progbits\",.stapsdt.base,comdat\n"
	                 ".weak _.stapsdt.base\n"
	                 ".hidden _.stapsdt.base\n"
	                 "_.stapsdt.base: .space 1\n"
	                 ".size _.stapsdt.base, 1\n"
	                 ".popsection\n"
	                 ".endif\n");
}

int main(int argc, char **argv)
{
	char buf[64];
	(void)argv;
	if (argc > 5) /* never: the note is there to be read */
		site();
	printf("waiting pid %d\n", (int)getpid());
	fflush(stdout);
	while (fgets(buf, sizeof buf, stdin))
		;
	return 0;
}
