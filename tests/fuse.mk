# FUSE (issue 4): install the default seccomp profile where resview-runtime
# looks for it ($(PREFIX)/bin/../share/resview/seccomp.json) and the AppArmor
# profile where AppArmor reads profiles. Loading it is
# $(PREFIX)/share/resview/apparmor/load.sh (a no-op where AppArmor is off),
# which install.sh should call.
.PHONY: install-fuse-profiles uninstall-fuse-profiles
install: install-fuse-profiles
uninstall: uninstall-fuse-profiles
install-fuse-profiles:
	install -d $(DESTDIR)$(PREFIX)/share/resview $(DESTDIR)$(PREFIX)/share/resview/apparmor
	install -m 0644 profiles/seccomp.json $(DESTDIR)$(PREFIX)/share/resview/seccomp.json
	install -m 0644 profiles/apparmor/resview-fuse $(DESTDIR)$(PREFIX)/share/resview/apparmor/resview-fuse
	install -m 0755 profiles/apparmor/load.sh $(DESTDIR)$(PREFIX)/share/resview/apparmor/load.sh
	if [ -d $(DESTDIR)/etc/apparmor.d ]; then \
	    install -m 0644 profiles/apparmor/resview-fuse $(DESTDIR)/etc/apparmor.d/resview-fuse; fi
uninstall-fuse-profiles:
	rm -f $(DESTDIR)$(PREFIX)/share/resview/seccomp.json \
	      $(DESTDIR)$(PREFIX)/share/resview/apparmor/resview-fuse \
	      $(DESTDIR)$(PREFIX)/share/resview/apparmor/load.sh $(DESTDIR)/etc/apparmor.d/resview-fuse
	-rmdir $(DESTDIR)$(PREFIX)/share/resview/apparmor $(DESTDIR)$(PREFIX)/share/resview 2>/dev/null
