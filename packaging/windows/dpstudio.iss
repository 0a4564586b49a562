; Inno Setup script for dpstudio (Windows). Cannot be built on the Linux CI machines.
;
; On Windows, from the repository root, with the venv (py -3.11 -m venv .venv; .venv\Scripts\pip install -e . pyinstaller):
;   .venv\Scripts\python packaging\render_icons.py build\icons
;   set DPSTUDIO_ICON_DIR=%CD%\build\icons
;   .venv\Scripts\python -m PyInstaller --noconfirm --distpath packaging\dist --workpath build\pyinstaller packaging\dpstudio.spec
;   "C:\Program Files (x86)\Inno Setup 6\ISCC.exe" packaging\windows\dpstudio.iss
; Output: packaging\dist\dpstudio-<version>-setup.exe
;
; The bundle (packaging\dist\dpstudio\) comes from the same dpstudio.spec as the Linux .deb and has
; two executables: dpstudio.exe (console: the CLI, `dpstudio --version`, `dpstudio release ...`) and
; dpstudio-gui.exe (windowed: shortcuts and "Open with"). The version is read from
; dpstudio\__init__.py (as the spec, the .deb and the macOS app do); ISCC /DAppVersion=X overrides it.

#define AppName "dpstudio"
#ifndef AppVersion
#define InitPy AddBackslash(SourcePath) + "..\..\dpstudio\__init__.py"
#define VersionLine ""
#define FileHandle FileOpen(InitPy)
#if FileHandle
  #sub ReadVersionLine
    #define Line FileRead(FileHandle)
    #if Pos("__version__", Line) == 1
      #define VersionLine Line
    #endif
  #endsub
  #for {0; !FileEof(FileHandle) && VersionLine == ""; 0} ReadVersionLine
  #expr FileClose(FileHandle)
#endif
#if VersionLine == ""
  #error Cannot read __version__ from dpstudio\__init__.py
#endif
; __version__ = "0.1.0"  ->  0.1.0
#define AppVersion Copy(VersionLine, Pos('"', VersionLine) + 1, RPos('"', VersionLine) - Pos('"', VersionLine) - 1)
#endif
#define BundleDir AddBackslash(SourcePath) + "..\dist\dpstudio"
#define IconFile AddBackslash(SourcePath) + "..\..\build\icons\dpstudio.ico"

[Setup]
AppId={{6B0E6C1D-5B7E-4B8B-9E59-2D3C1B0D7A51}
AppName={#AppName}
AppVersion={#AppVersion}
AppVerName={#AppName} {#AppVersion}
AppPublisher=dpstudio
DefaultDirName={autopf}\{#AppName}
DefaultGroupName={#AppName}
DisableProgramGroupPage=yes
; per-user install by default (no admin prompt); the user may choose all users
PrivilegesRequired=lowest
PrivilegesRequiredOverridesAllowed=dialog
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
OutputDir={#AddBackslash(SourcePath)}..\dist
OutputBaseFilename={#AppName}-{#AppVersion}-setup
Compression=lzma2/max
SolidCompression=yes
WizardStyle=modern
#if FileExists(IconFile)
SetupIconFile={#IconFile}
#endif
UninstallDisplayIcon={app}\dpstudio-gui.exe
UninstallDisplayName={#AppName} {#AppVersion}
ChangesAssociations=yes
ChangesEnvironment=yes

[Languages]
Name: "english"; MessagesFile: "compiler:Default.isl"

[Tasks]
Name: "desktopicon"; Description: "{cm:CreateDesktopIcon}"; GroupDescription: "{cm:AdditionalIcons}"; Flags: unchecked
Name: "addtopath"; Description: "Add the dpstudio command line to PATH"; GroupDescription: "Command line:"; Flags: unchecked
Name: "assoccsv"; Description: "Offer dpstudio in ""Open with"" for .csv files"; GroupDescription: "File associations:"
Name: "assocparquet"; Description: "Open .parquet files with dpstudio"; GroupDescription: "File associations:"

[Files]
Source: "{#BundleDir}\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[Icons]
Name: "{group}\{#AppName}"; Filename: "{app}\dpstudio-gui.exe"; Comment: "Release sensitive tables with differential privacy"
Name: "{group}\{#AppName} demo"; Filename: "{app}\dpstudio-gui.exe"; Parameters: """{app}\_internal\resources\demo\census_demo.csv"""
Name: "{group}\Uninstall {#AppName}"; Filename: "{uninstallexe}"
Name: "{autodesktop}\{#AppName}"; Filename: "{app}\dpstudio-gui.exe"; Tasks: desktopicon

[Registry]
; ProgID used by both extensions
Root: HKA; Subkey: "Software\Classes\dpstudio.Table"; ValueType: string; ValueName: ""; ValueData: "Data table (dpstudio)"; Flags: uninsdeletekey
Root: HKA; Subkey: "Software\Classes\dpstudio.Table\DefaultIcon"; ValueType: string; ValueName: ""; ValueData: "{app}\dpstudio-gui.exe,0"
Root: HKA; Subkey: "Software\Classes\dpstudio.Table\shell\open"; ValueType: string; ValueName: ""; ValueData: "Open with dpstudio"
Root: HKA; Subkey: "Software\Classes\dpstudio.Table\shell\open\command"; ValueType: string; ValueName: ""; ValueData: """{app}\dpstudio-gui.exe"" ""%1"""
; Application registration: appears in "Open with" for the types it declares
Root: HKA; Subkey: "Software\Classes\Applications\dpstudio-gui.exe"; ValueType: string; ValueName: "FriendlyAppName"; ValueData: "dpstudio"; Flags: uninsdeletekey
Root: HKA; Subkey: "Software\Classes\Applications\dpstudio-gui.exe\shell\open\command"; ValueType: string; ValueName: ""; ValueData: """{app}\dpstudio-gui.exe"" ""%1"""
Root: HKA; Subkey: "Software\Classes\Applications\dpstudio-gui.exe\SupportedTypes"; ValueType: string; ValueName: ".csv"; ValueData: ""
Root: HKA; Subkey: "Software\Classes\Applications\dpstudio-gui.exe\SupportedTypes"; ValueType: string; ValueName: ".parquet"; ValueData: ""
; .csv: only "Open with" (do not steal the default from Excel)
Root: HKA; Subkey: "Software\Classes\.csv\OpenWithProgids"; ValueType: string; ValueName: "dpstudio.Table"; ValueData: ""; Flags: uninsdeletevalue; Tasks: assoccsv
; .parquet: usually unclaimed - make dpstudio the default, and in "Open with"
Root: HKA; Subkey: "Software\Classes\.parquet"; ValueType: string; ValueName: ""; ValueData: "dpstudio.Table"; Flags: uninsdeletevalue; Tasks: assocparquet
Root: HKA; Subkey: "Software\Classes\.parquet"; ValueType: string; ValueName: "Content Type"; ValueData: "application/vnd.apache.parquet"; Flags: uninsdeletevalue; Tasks: assocparquet
Root: HKA; Subkey: "Software\Classes\.parquet\OpenWithProgids"; ValueType: string; ValueName: "dpstudio.Table"; ValueData: ""; Flags: uninsdeletevalue; Tasks: assocparquet
; optional PATH entry for the console CLI
Root: HKCU; Subkey: "Environment"; ValueType: expandsz; ValueName: "Path"; ValueData: "{olddata};{app}"; Tasks: addtopath; Check: NeedsAddPath(ExpandConstant('{app}')); Flags: preservestringtype

[Run]
Filename: "{app}\dpstudio-gui.exe"; Description: "{cm:LaunchProgram,{#AppName}}"; Flags: nowait postinstall skipifsilent

[UninstallDelete]
; PyInstaller leaves nothing behind; only __pycache__ style leftovers if any
Type: filesandordirs; Name: "{app}\_internal"

[Code]
function NeedsAddPath(Dir: string): Boolean;
var
  Path: string;
begin
  if not RegQueryStringValue(HKCU, 'Environment', 'Path', Path) then
  begin
    Result := True;
    exit;
  end;
  Result := Pos(';' + Uppercase(Dir) + ';', ';' + Uppercase(Path) + ';') = 0;
end;

procedure RemovePathEntry(Dir: string);
var
  Path: string;
  P: Integer;
begin
  if not RegQueryStringValue(HKCU, 'Environment', 'Path', Path) then exit;
  P := Pos(';' + Uppercase(Dir), Uppercase(Path));
  if P > 0 then
  begin
    Delete(Path, P, Length(Dir) + 1);
    RegWriteExpandStringValue(HKCU, 'Environment', 'Path', Path);
  end;
end;

procedure CurUninstallStepChanged(CurUninstallStep: TUninstallStep);
begin
  if CurUninstallStep = usPostUninstall then
    RemovePathEntry(ExpandConstant('{app}'));
end;
