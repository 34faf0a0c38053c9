provider p { probe a(void); probe b(int x, char *y); };
