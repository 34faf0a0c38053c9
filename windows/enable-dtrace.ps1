<#
.SYNOPSIS
    Keeps DTrace enabled on a Windows host after Windows updates: checks the
    boot setting "dtrace", turns it back on when an update switched it off,
    and schedules the restart it needs inside a maintenance window.

.DESCRIPTION
    UNTESTED: THIS SCRIPT HAS NEVER BEEN RUN.  billing-probes is developed
    and tested on Linux only; no Windows machine was available to run or
    test it.  Its syntax was checked with a PowerShell grammar, nothing more
    (docs/function-sites.md, "Windows").  Try it on a test host first, with
    -WhatIf.

    DTrace on Windows needs "bcdedit /set dtrace on" and a restart, and a
    Windows update may switch the setting off again.  Run after every update
    (windows/enable-dtrace-task.xml does, as SYSTEM), this script:
      1. reads the setting from "bcdedit /enum {current}";
      2. when it is off: suspends BitLocker on the system drive for one
         restart (a changed boot setting would otherwise ask for the recovery
         key), sets it on, and reads it back;
      3. when the setting is on but the DTrace driver is not running (the
         setting waits for a restart): makes sure a restart is scheduled at
         the next maintenance window, as a one-shot scheduled task; but if a
         restart it scheduled has already happened and the driver still does
         not run, it schedules none (no restart loop) and fails, saying so;
      4. when the setting is on and the driver runs: does nothing.
    Running it again changes nothing that is already right (idempotent): the
    restart task is replaced, never duplicated, and removed once DTrace runs.
    Every run appends what it found and did to the log file.

    Exit codes: 0 done (nothing to do, or restart scheduled); 1 a step failed
    (the log says which); 2 bad arguments or not elevated.

.PARAMETER MaintenanceStart
    Start of the daily maintenance window, local time, "HH:mm" (default 02:00).
.PARAMETER MaintenanceEnd
    End of the window, "HH:mm" (default 04:00); may be past midnight.
.PARAMETER LogPath
    Log file (default %ProgramData%\billing-probes\enable-dtrace.log).
.PARAMETER DriverName
    Name of the DTrace kernel driver service (default "dtrace").
.PARAMETER OnWords
    How bcdedit spells "on" in this system's language (default Yes, On, True).

.EXAMPLE
    powershell.exe -NoProfile -ExecutionPolicy Bypass -File enable-dtrace.ps1 -WhatIf
.EXAMPLE
    powershell.exe -NoProfile -ExecutionPolicy Bypass -File enable-dtrace.ps1 -MaintenanceStart 01:30 -MaintenanceEnd 03:00
#>
[CmdletBinding(SupportsShouldProcess = $true)]
param(
    [ValidatePattern('^([01][0-9]|2[0-3]):[0-5][0-9]$')]
    [string] $MaintenanceStart = '02:00',

    [ValidatePattern('^([01][0-9]|2[0-3]):[0-5][0-9]$')]
    [string] $MaintenanceEnd = '04:00',

    [string] $LogPath = (Join-Path $env:ProgramData 'billing-probes\enable-dtrace.log'),

    [string] $DriverName = 'dtrace',

    [string[]] $OnWords = @('Yes', 'On', 'True')
)

Set-StrictMode -Version 3.0
$ErrorActionPreference = 'Stop'

$RestartTaskName = 'billing-probes DTrace restart'
# When this script last scheduled a restart (round-trip date), so a restart
# that did not bring DTrace up is noticed instead of repeated.
$StatePath = Join-Path (Split-Path -Parent $LogPath) 'enable-dtrace.restart-scheduled'

function Write-Log {
    param([Parameter(Mandatory = $true)] [string] $Message)
    $line = '{0} enable-dtrace: {1}' -f (Get-Date -Format 'yyyy-MM-ddTHH:mm:ssK'), $Message
    Write-Output $line
    $dir = Split-Path -Parent $LogPath
    if (-not (Test-Path -LiteralPath $dir)) {
        New-Item -ItemType Directory -Path $dir -Force | Out-Null
    }
    Add-Content -LiteralPath $LogPath -Value $line -Encoding UTF8
}

function Test-Elevated {
    $identity = [Security.Principal.WindowsIdentity]::GetCurrent()
    $principal = New-Object Security.Principal.WindowsPrincipal($identity)
    return $principal.IsInRole([Security.Principal.WindowsBuiltInRole]::Administrator)
}

# The "dtrace" element of the boot entry in use: $true, $false (absent or
# off), or an exception when bcdedit fails.
function Get-DtraceBootSetting {
    $out = & bcdedit.exe /enum '{current}' 2>&1
    if ($LASTEXITCODE -ne 0) {
        throw "bcdedit /enum {current} failed ($LASTEXITCODE): $($out -join ' ')"
    }
    foreach ($line in $out) {
        if ("$line" -match '^\s*dtrace\s+(\S+)\s*$') {
            return ($OnWords -contains $Matches[1])
        }
    }
    return $false
}

function Test-DtraceDriverRunning {
    $driver = Get-CimInstance -ClassName Win32_SystemDriver -Filter "Name='$DriverName'" -ErrorAction SilentlyContinue
    return ($null -ne $driver -and $driver.State -eq 'Running')
}

# The next moment inside the maintenance window: now when the window is
# open, else the window's next start.
function Get-NextMaintenanceTime {
    $now = Get-Date
    $start = [datetime]::ParseExact($MaintenanceStart, 'HH:mm', [Globalization.CultureInfo]::InvariantCulture)
    $end = [datetime]::ParseExact($MaintenanceEnd, 'HH:mm', [Globalization.CultureInfo]::InvariantCulture)
    $todayStart = $now.Date.Add($start.TimeOfDay)
    $todayEnd = $now.Date.Add($end.TimeOfDay)
    if ($todayEnd -le $todayStart) {
        # the window spans midnight
        if ($now.TimeOfDay -lt $end.TimeOfDay) {
            return $now.AddMinutes(5)
        }
        $todayEnd = $todayEnd.AddDays(1)
    }
    if ($now -ge $todayStart -and $now -lt $todayEnd) {
        return $now.AddMinutes(5)
    }
    if ($now -lt $todayStart) {
        return $todayStart
    }
    return $todayStart.AddDays(1)
}

function Suspend-BitLockerOnce {
    if (-not (Get-Command -Name Get-BitLockerVolume -ErrorAction SilentlyContinue)) {
        Write-Log 'BitLocker cmdlets absent: nothing to suspend'
        return
    }
    $volume = Get-BitLockerVolume -MountPoint $env:SystemDrive -ErrorAction SilentlyContinue
    if ($null -eq $volume -or "$($volume.ProtectionStatus)" -ne 'On') {
        Write-Log "BitLocker protection is not on for $($env:SystemDrive): nothing to suspend"
        return
    }
    if ($PSCmdlet.ShouldProcess($env:SystemDrive, 'Suspend-BitLocker -RebootCount 1')) {
        Suspend-BitLocker -MountPoint $env:SystemDrive -RebootCount 1 | Out-Null
        Write-Log "BitLocker suspended on $($env:SystemDrive) for one restart"
    }
}

function Enable-DtraceBootSetting {
    if ($PSCmdlet.ShouldProcess('{current}', 'bcdedit /set dtrace on')) {
        $out = & bcdedit.exe /set '{current}' dtrace on 2>&1
        if ($LASTEXITCODE -ne 0) {
            throw "bcdedit /set {current} dtrace on failed ($LASTEXITCODE): $($out -join ' ')"
        }
        if (-not (Get-DtraceBootSetting)) {
            throw 'bcdedit accepted "dtrace on" but the boot entry still reads off'
        }
        Write-Log 'boot setting dtrace set on'
    }
}

function Register-MaintenanceRestart {
    $when = Get-NextMaintenanceTime
    $existing = Get-ScheduledTask -TaskName $RestartTaskName -ErrorAction SilentlyContinue
    if ($null -ne $existing) {
        $at = ($existing.Triggers | Select-Object -First 1).StartBoundary
        Write-Log "a restart is already scheduled ($RestartTaskName, at $at): replacing it"
    }
    if ($PSCmdlet.ShouldProcess($RestartTaskName, "restart at $when")) {
        $reason = 'billing-probes: restart to enable DTrace (boot setting dtrace was reset)'
        $action = New-ScheduledTaskAction -Execute 'shutdown.exe' -Argument "/r /t 60 /d p:0:0 /c `"$reason`""
        $trigger = New-ScheduledTaskTrigger -Once -At $when
        $principal = New-ScheduledTaskPrincipal -UserId 'S-1-5-18' -LogonType ServiceAccount -RunLevel Highest
        $settings = New-ScheduledTaskSettingsSet -StartWhenAvailable -ExecutionTimeLimit (New-TimeSpan -Minutes 5)
        Register-ScheduledTask -TaskName $RestartTaskName -Action $action -Trigger $trigger `
            -Principal $principal -Settings $settings -Force | Out-Null
        Set-Content -LiteralPath $StatePath -Value $when.ToString('o') -Encoding UTF8
        Write-Log "restart scheduled at $($when.ToString('yyyy-MM-dd HH:mm')) ($RestartTaskName)"
    }
}

# $true when a restart this script scheduled has happened since.
function Test-ScheduledRestartDone {
    if (-not (Test-Path -LiteralPath $StatePath)) {
        return $false
    }
    $scheduled = [datetime]::Parse((Get-Content -LiteralPath $StatePath -Raw).Trim(), $null,
        [Globalization.DateTimeStyles]::RoundtripKind)
    $boot = (Get-CimInstance -ClassName Win32_OperatingSystem).LastBootUpTime
    return ($boot -gt $scheduled)
}

function Remove-MaintenanceRestart {
    if ($null -ne (Get-ScheduledTask -TaskName $RestartTaskName -ErrorAction SilentlyContinue)) {
        if ($PSCmdlet.ShouldProcess($RestartTaskName, 'Unregister-ScheduledTask')) {
            Unregister-ScheduledTask -TaskName $RestartTaskName -Confirm:$false
            Write-Log "DTrace runs: removed the restart task left from an earlier run"
        }
    }
    if (Test-Path -LiteralPath $StatePath) {
        Remove-Item -LiteralPath $StatePath -WhatIf:$WhatIfPreference
    }
}

if (-not (Test-Elevated)) {
    [Console]::Error.WriteLine('enable-dtrace: must run elevated (as Administrator or SYSTEM)')
    exit 2
}

try {
    $on = Get-DtraceBootSetting
    $running = Test-DtraceDriverRunning
    Write-Log ("found: boot setting dtrace {0}, driver '{1}' {2}" -f
        $(if ($on) { 'on' } else { 'off' }), $DriverName, $(if ($running) { 'running' } else { 'not running' }))
    if (-not $on) {
        Suspend-BitLockerOnce
        Enable-DtraceBootSetting
        Register-MaintenanceRestart
    } elseif (-not $running) {
        if (Test-ScheduledRestartDone) {
            throw ("the boot setting is on and the machine restarted as scheduled, but driver " +
                "'$DriverName' does not run: not scheduling another restart; check the DTrace " +
                "installation and -DriverName, then delete $StatePath")
        }
        Register-MaintenanceRestart
    } else {
        Remove-MaintenanceRestart
        Write-Log 'nothing to do: DTrace is enabled and running'
    }
    exit 0
} catch {
    Write-Log "FAILED: $($_.Exception.Message)"
    exit 1
}
